"""The frame schedule a sweep's trials kept, as assess says it (shared.sweep_analyse)."""

from netassay.shared.sweep_analyse import schedule_line


def test_no_schedule_recorded_says_nothing():
    assert schedule_line([]) is None
    assert schedule_line([{"technique": "sendmmsg", "sent": 10}]) is None  # older generator


def test_one_schedule_is_said_once():
    g = {"technique": "xdp", "batch": 64, "spacing_ns": 1000, "catch_up": 2.0,
         "lateness_p999_ns": 12_500}  # fmt: skip
    assert schedule_line([g, dict(g)]) == (
        "xdp: batches of 64 frame(s), 1 us apart, catch-up at most 2x; p99.9 lateness up to 12.5 us"
    )


def test_schedules_that_differ_are_said_as_ranges_with_the_worst_lateness():
    gens = [
        {"technique": "xdp", "batch": 1, "spacing_ns": 20_000, "lateness_p999_ns": 3_000},
        {"technique": "xdp", "batch": 32, "spacing_ns": 500, "lateness_p999_ns": 40_000},
        {"technique": "sendmmsg", "batch": 8, "spacing_ns": 2_000},
    ]
    assert schedule_line(gens) == (
        "sendmmsg/xdp: batches of 1-32 frame(s), 0.5-20 us apart; p99.9 lateness up to 40 us"
    )


def test_a_lateness_of_milliseconds_is_said_in_milliseconds():
    g = {"technique": "xdp", "batch": 2, "spacing_ns": 3333.3, "lateness_p999_ns": 16_400_000}
    assert schedule_line([g]).endswith("3.33 us apart; p99.9 lateness up to 16.4 ms")
