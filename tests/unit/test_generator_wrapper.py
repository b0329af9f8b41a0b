"""The netassay-gen wrapper: argument building and output parsing (no binary runs)."""

from __future__ import annotations

import json

import pytest

from netassay.errors import GeneratorError, UsageError
from netassay.traffic import generator as gen

SAMPLE = {
    "mode": "send",
    "technique": "af_packet_sendmmsg",
    "planned": 1000,
    "sent": 1000,
    "first_tx_ns": 10,
    "last_tx_ns": 9_990_010,
    "duration_s": 0.00999,
    "rate_pps": 100000.0,
    "achieved_rate_pps": 100000.0,
    "rate_error": 0.0,
    "lateness_max_ns": 900,
    "lateness_p99_ns": 400,
    "retries": 0,
    "stopped_by_signal": False,
    "ok": True,
}


def test_build_args_formats_numbers_and_flags() -> None:
    argv = gen.build_args(
        "tg0", "02:00:00:00:00:01", "198.18.0.2", "198.19.0.2", 200_000, 10, flows=16
    )
    assert argv[argv.index("--rate") + 1] == "200000"
    assert argv[argv.index("--duration") + 1] == "10s"
    assert argv[argv.index("--flows") + 1] == "16"
    assert argv[argv.index("--size") + 1] == "64"
    assert "--json" in argv and "--best-effort" not in argv
    argv = gen.build_args(
        "tg0", "02:00:00:00:00:01", "2001:2::2", "2001:2:0:1::2", 1500.5, 0.25, 128, 1, True,
        ["--burst", "8"],
    )  # fmt: skip
    assert argv[argv.index("--rate") + 1] == "1500.5"
    assert argv[argv.index("--duration") + 1] == "0.25s"
    assert argv[-3:] == ["--best-effort", "--burst", "8"]


@pytest.mark.parametrize(("rate", "duration", "flows"), [(0, 1, 1), (1000, 0, 1), (1000, 1, 0)])
def test_build_args_rejects_impossible_values(rate: float, duration: float, flows: int) -> None:
    with pytest.raises(UsageError):
        gen.build_args("tg0", "02:00:00:00:00:01", "198.18.0.2", "198.19.0.2", rate, duration,
                       flows=flows)  # fmt: skip


def test_parse_output_ok_and_rate_missed() -> None:
    res = gen.parse_output(json.dumps(SAMPLE), "", 0)
    assert res.ok and res.sent == 1000 and res.technique == "af_packet_sendmmsg"
    assert res.raw["mode"] == "send"
    missed = dict(SAMPLE, ok=False, rate_error=-0.2, achieved_rate_pps=80000.0)
    res = gen.parse_output(json.dumps(missed), "netassay-gen: the rate was not kept", 3)
    assert res.ok is False and res.rate_error == -0.2


def test_parse_output_failures_raise_one_line_errors() -> None:
    with pytest.raises(GeneratorError, match="refused its arguments: netassay-gen: bad"):
        gen.parse_output("", "netassay-gen: bad\n", 2)
    with pytest.raises(GeneratorError, match=r"failed \(exit 1\)"):
        gen.parse_output("", "netassay-gen: socket\n", 1)
    with pytest.raises(GeneratorError, match="no JSON result"):
        gen.parse_output("not json", "", 0)
    with pytest.raises(GeneratorError, match="missing keys sent"):
        gen.parse_output(json.dumps({k: v for k, v in SAMPLE.items() if k != "sent"}), "", 0)
    err = GeneratorError("a", "b", "c")
    assert "\n" not in err.line()


def test_a_trial_keeps_the_same_generator_keys_and_null_where_it_reported_none() -> None:
    # the stored counters["generator"]: these keys, in this order, whatever the report
    assert gen.RECORDED_KEYS == (
        "technique", "planned", "sent", "first_tx_ns", "last_tx_ns", "duration_s", "rate_pps",
        "achieved_rate_pps", "rate_error", "lateness_max_ns", "lateness_p99_ns", "retries",
        "stopped_by_signal", "ok", "rate_tolerance", "truncated", "shortfall", "stop_reason",
        "batch", "spacing_ns", "catch_up", "lateness_p50_ns", "lateness_p999_ns",
        "egress_drops", "end_ns", "stall_max_ns", "stall_start_ns",
    )  # fmt: skip
    res = gen.parse_output(json.dumps({**SAMPLE, "stall_max_ns": 7, "flows": 4}), "", 0)
    kept = res.recorded()
    assert list(kept) == list(gen.RECORDED_KEYS) and "flows" not in kept and "mode" not in kept
    assert kept["stall_max_ns"] == 7 and kept["sent"] == 1000 and kept["end_ns"] is None


def test_the_report_beyond_its_required_fields_is_read_typed_or_none() -> None:
    res = gen.parse_output(json.dumps(SAMPLE), "", 0)  # an older generator's report
    assert (res.end_ns, res.stall_max_ns, res.stall_start_ns, res.fallback_reason) == (None,) * 4
    assert res.egress_drops == 0 and res.sent_per_size == {} and res.frames_sent == 1000
    capture = {
        **SAMPLE, "sent": 1500, "marked": 1000, "marked_planned": 1000, "end_ns": 9_990_100,
        "stall_max_ns": 2_000_000, "stall_start_ns": 5_000, "egress_drops": 3,
        "fallback_reason": "xdp_live_frames unavailable",
        "sent_per_size": {"64": 1200, "1514": 300}, "marked_per_size": {"64": 1000},
    }  # fmt: skip
    res = gen.parse_output(json.dumps(capture), "", 0)
    assert res.sent == 1000 and res.frames_sent == 1500  # the sink counts the marked ones
    assert (res.end_ns, res.stall_max_ns, res.stall_start_ns) == (9_990_100, 2_000_000, 5_000)
    assert res.egress_drops == 3 and res.fallback_reason == "xdp_live_frames unavailable"
    assert res.sent_per_size == {"64": 1200, "1514": 300} and res.marked_per_size == {"64": 1000}


def test_a_run_made_of_others_reports_its_own_fields_then_what_it_adds() -> None:
    res = gen.parse_output(json.dumps(SAMPLE), "", 0)
    made = res.with_report(reported=False, stop_reason="lost")
    assert list(made.raw) == [*list(gen.RECORDED_KEYS)[:14], "reported", "stop_reason"]
    assert made.raw["sent"] == 1000 and "mode" not in made.raw and res.raw["mode"] == "send"
