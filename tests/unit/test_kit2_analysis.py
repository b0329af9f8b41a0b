"""The pure parts of burst, recovery and reconfig, against hand-computed values."""

from __future__ import annotations

import pytest

from netassay.analysis import burst as analysis_burst
from netassay.analysis import reconfig as analysis_reconfig
from netassay.analysis import recovery as analysis_recovery


def search_on(buffer: int, most: int, resolution: float = 0.01) -> analysis_burst.LengthSearch:
    """A test against a SUT that forwards a burst whole up to ``buffer`` frames."""
    s = analysis_burst.LengthSearch(most, resolution, 16)
    while (n := s.next_length()) is not None:
        s.record(n, n <= buffer)
    return s


def test_the_search_finds_the_longest_burst_within_its_resolution():
    s = search_on(1_053, 100_000)
    assert s.done and not s.at_limit
    assert 1_053 * 0.99 <= s.result <= 1_053
    assert s.tried[0] == (100_000, False)  # the longest allowed first
    assert len(s.tried) <= 16  # log2(100000 / (1% of 1053)) + 2


def test_one_frame_resolution_finds_it_exactly():
    assert search_on(777, 5_000, resolution=0.0).result == 777


def test_a_sut_that_forwards_every_burst_is_at_the_limit():
    s = search_on(10**9, 5_000)
    assert s.result == 5_000 and s.at_limit and len(s.tried) == 1


def test_a_sut_that_loses_even_the_shortest_burst_finds_nothing():
    s = search_on(3, 5_000)
    assert s.result == 0 and not s.at_limit


def test_rfc9004_buffer_times():
    # bursts at 100 kpps, a SUT of throughput 5 kpps holding 1000 frames: the longest
    # lossless burst B = 1000 / (1 - 5/100) = 1052.6; implied B/R, corrected B/R (1 - T/R)
    s = analysis_burst.summary([1052, 1053, 1053], 100_000.0, 5_000.0, 5_000)
    assert s.mean_frames == pytest.approx(1052.667, abs=1e-3)
    assert s.implied_buffer_s == pytest.approx(1052.667 / 100_000)
    assert s.corrected_buffer_s == pytest.approx(1052.667 / 100_000 * 0.95)
    assert s.buffered_frames == pytest.approx(1000.03, abs=0.01)
    assert s.ci95_frames == pytest.approx(4.303 * 0.57735 / 3**0.5, rel=1e-3)
    assert s.at_limit == 0
    none = analysis_burst.summary([1000], 1e5, None, 5_000)
    assert none.corrected_buffer_s is None and none.ci95_frames is None
    assert analysis_burst.corrected_buffer_s(1000, 1e5, 2e5) == 0.0  # no buffer needed


def drain(q: int, service: float, low: float, dt: float, t_end: float, clump: int = 0):
    """The sink's count read every ``dt`` after A (t=0) while a full queue of ``q``
    frames drains at ``service`` fed at ``low``: received at ``service`` until empty;
    ``clump``: frames arrive in batches of that many (a busy host's NAPI)."""
    t_empty = q / (service - low)
    out, t = [], 0.0
    while t <= t_end + 1e-9:
        got = service * t if t <= t_empty else service * t_empty + low * (t - t_empty)
        out.append((t, int(got // clump * clump) if clump else round(got)))
        t += dt
    return out


def test_recovery_is_when_the_queue_has_drained():
    r = analysis_recovery.recovery(drain(1_000, 10_000.0, 5_500.0, 0.01, 1.0), 0.0, 5_500.0)
    assert r.recovery_s == pytest.approx(1_000 / 4_500, abs=0.002)  # 222 ms
    assert r.settled_frames == pytest.approx(-1_000, abs=10)  # the backlog drained


def test_a_clumpy_count_finds_the_same_time():
    r = analysis_recovery.recovery(
        drain(1_000, 10_000.0, 5_500.0, 0.01, 1.0, clump=64), 0.0, 5_500.0
    )
    assert r.recovery_s == pytest.approx(1_000 / 4_500, abs=0.01)


def test_no_backlog_recovers_at_once_and_loss_without_end_never():
    steady = [(t / 100, round(5_500 * t / 100)) for t in range(50)]
    assert analysis_recovery.recovery(steady, 0.0, 5_500.0).recovery_s == 0.0
    starved = [(t / 100, round(4_000 * t / 100)) for t in range(50)]
    assert analysis_recovery.recovery(starved, 0.0, 5_500.0).recovery_s is None
    s = analysis_recovery.summary([0.2, 0.25, None])
    assert s.recovered == 2 and s.mean_s == pytest.approx(0.225)


def test_loss_that_stops_is_a_recovery_too():
    # 300 ms forwarding only 4 kpps of 5.5 offered, then all of it: D rises, then flat
    samples = [(t / 100, round(4_000 * t / 100 if t <= 30 else 1_200 + 5_500 * (t - 30) / 100))
               for t in range(100)]  # fmt: skip
    r = analysis_recovery.recovery(samples, 0.0, 5_500.0)
    assert r.recovery_s == pytest.approx(0.3, abs=0.005) and r.settled_frames > 400


def test_samples_before_the_drop_are_not_read():
    before = [(-0.02, 0), (-0.01, 100)]
    r = analysis_recovery.recovery([*before, *drain(0, 10_000.0, 5_500.0, 0.01, 0.2)], 0.0, 5_500.0)
    assert r.recovery_s == 0.0 and r.after[0][0] == 0.0


def test_effective_blocked_time_is_lost_over_rate():
    assert analysis_reconfig.blocked_s(2_000, 10_000.0) == pytest.approx(0.2)
    s = analysis_reconfig.summary([(2_000, 10_000.0), (2_100, 10_000.0)])
    assert s.mean_blocked_s == pytest.approx(0.205) and s.lost == 4_100
    assert s.ci95_blocked_s == pytest.approx(12.706 * 0.00707107 / 2**0.5, rel=1e-3)


def test_a_bursts_rate_is_judged_against_its_span():
    from netassay.methods.burst.run import rate_judged
    from netassay.quality import rate_warning
    from netassay.trial.record import TrialRecord

    def burst(n: int, achieved: float) -> TrialRecord:
        w = rate_warning(100_000.0, achieved)
        return TrialRecord(0, 0, 100_000.0, n / 1e5, n, n, "t", achieved, warnings=[w] if w else [])

    short = rate_judged(burst(200, 99_500.0), 200, 100_000.0)  # 0.5% off a 2 ms burst: 1% allowed
    assert not short.excluded and "burst rate -0.50% off, within 1.00%" in short.warnings[0]
    assert rate_judged(burst(20_000, 99_500.0), 20_000, 100_000.0).excluded  # 0.1% of 200 ms


def test_a_recovery_trials_two_generators_are_one_trial():
    # 10 s at 5.5 kpps (the whole trial) and the first 8 s of it at 5.5 kpps more (the
    # overload): offered 55,000 + 44,000 frames, 9,900 pps over the 10 s
    from netassay.methods.recovery.run import phased
    from netassay.traffic.generator import GenResult

    def run(sent: int, first: int, last: int, secs: float, late: int, ok: bool = True):
        return GenResult("t", sent, sent, first, last, secs, 5_500.0, sent / secs, None,
                         late, late // 2, 1, False, ok, {"sent": sent})  # fmt: skip

    whole, extra = (
        run(55_000, 1_000, 10_000_001_000, 10.0, 30_000),
        run(44_000, 900, 8_000_000_900, 8.0, 90_000),
    )
    both = phased(whole, extra)
    assert both.sent == both.planned == 99_000 and both.duration_s == 10.0
    assert both.rate_pps == both.achieved_rate_pps == pytest.approx(9_900.0)
    assert both.rate_error == pytest.approx(0.0) and both.ok
    assert (both.first_tx_ns, both.last_tx_ns) == (900, 10_000_001_000)
    assert both.lateness_max_ns == 90_000 and both.retries == 2
    assert both.raw["phases"] == {"whole": {"sent": 55_000}, "overload": {"sent": 44_000}}
    short = phased(whole, run(40_000, 900, 8_000_000_900, 8.0, 0, ok=False))  # fell short
    assert short.rate_error == pytest.approx(-4_000 / 99_000) and not short.ok


def test_a_sampler_kept_waiting_reads_once_not_once_per_missed_tick():
    import itertools
    import time

    from netassay.methods.recovery.run import Sampler

    calls = []

    def count() -> int:  # the 5th read stalls 80 ms: 8 ticks of 10 ms go by
        calls.append(time.monotonic())
        if len(calls) == 5:
            time.sleep(0.08)
        return len(calls)

    s = Sampler(count, 0.01)
    s.start()
    time.sleep(0.25)
    s.stop()
    gaps = [b[0] - a[0] for a, b in zip(s.samples, s.samples[1:-1], strict=False)]
    assert max(gaps) >= 0.08 and len(s.samples) < 0.25 / 0.01
    # no clump of reads at one instant after the stall: reads that caught up on the
    # missed ticks come back to back (three within 4 ms); one tick woken late on a busy
    # host may fall close to the next, alone
    short = [g < 0.002 for g in gaps]
    assert not any(x and y for x, y in itertools.pairwise(short)), gaps
