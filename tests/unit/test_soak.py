"""The soak's pure parts on plain data: segments, the per-second series (its totals
exact, its split an estimate), events, the verdict, and the --rate/--goal parsing."""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from netassay.errors import UsageError
from netassay.methods.soak import series
from netassay.methods.soak.request import SoakRequest, parse_goal, parse_load, pdr_share
from netassay.methods.soak.sampler import SampledBed, Sampler


def test_segments_are_whole_but_the_last():
    assert series.segment_lengths(30, 10) == [10, 10, 10]
    assert series.segment_lengths(25, 10) == [10, 10, 5]
    assert series.segment_lengths(20, 5) == [5, 5, 5, 5]


def _samples(counts, step=1.0):
    return [(i * step, c, {} if i == 0 else {"cpu0": 0.5}) for i, c in enumerate(counts)]


def test_a_lossless_segment_has_no_loss_in_any_second():
    # the generator starts 0.05 s late: the first second receives less, but lost nothing
    seconds = series.per_second(_samples([0, 950, 1950, 2950]), 3000, 3000, 3000, 2.95)
    assert [s["received"] for s in seconds] == [950, 1000, 1050]  # the rest: the last's
    assert sum(s["offered"] for s in seconds) == pytest.approx(3000, abs=1)
    assert seconds[0]["offered"] == pytest.approx(3000 * 0.95 / 2.95, abs=1)  # ran 0.95 s of it
    assert all(s["loss_est"] == 0 for s in seconds)
    assert series.events(seconds, 0.0) == []


def test_the_exact_loss_is_split_where_the_count_fell_short():
    # 1000 offered per second; the second second lost 300, the sink counts it exactly
    seconds = series.per_second(_samples([0, 1000, 1700, 2700]), 3000, 2700, 2700, 3.0, start_s=10)
    assert [s["t"] for s in seconds] == [10, 11, 12]
    assert [s["loss_est"] for s in seconds] == [0, 300, 0]
    (ev,) = series.events(seconds, 0.005)
    assert dataclasses.asdict(ev) == {"start_s": 11, "length_s": 1.0, "seconds": 1, "lost_est": 300,
                                      "loss_ratio_est": pytest.approx(0.3)}  # fmt: skip


def test_consecutive_seconds_are_one_event_and_a_gap_ends_it():
    def sec(t, loss, gap=False):
        return {"t": t, "dt": 1.0, "offered": 100.0, "received": 100 - loss,
                "loss_est": float(loss), "gap": gap}  # fmt: skip

    seconds = [sec(0, 0), sec(1, 5), sec(2, 9), sec(3, 0), sec(4, 2), sec(5, 2, gap=True)]
    evs = series.events(seconds, 0.01)
    assert [(e.start_s, e.seconds, e.lost_est) for e in evs] == [(1, 2, 14), (4, 1, 2)]
    nine = series.Event(start_s=2, length_s=1.0, seconds=1, lost_est=9, loss_ratio_est=0.09)
    assert series.events(seconds, 0.05) == [nine]


def test_the_verdict_is_the_whole_runs_exact_loss_against_the_goal():
    assert series.verdict(4, 0, 1000, 1000, 0.0)[0] == series.PASS
    assert series.verdict(4, 0, 1000, 995, 0.005)[0] == series.PASS
    assert series.verdict(4, 0, 1000, 994, 0.005)[0] == series.FAIL
    assert (
        series.verdict(4, 1, 1000, 1000, 0.005)[0] == series.PASS
    )  # a quarter excluded: still judged
    assert series.verdict(4, 2, 1000, 1000, 0.005)[0] == series.INCONCLUSIVE
    assert series.verdict(2, 2, 0, 0, 0.005)[0] == series.INCONCLUSIVE


def _trial(k, sent, received, excluded=None, seconds=()):
    return {"repetition": k, "sent": sent, "received": received, "sink_dropped": 0,
            "excluded": excluded, "loss_location": {"sut_egress": sent - received},
            "counters": {"soak": {"per_second": list(seconds)}}}  # fmt: skip


def test_the_summary_leaves_out_an_excluded_segment():
    lossy = {"t": 10, "dt": 1.0, "offered": 100.0, "received": 50, "loss_est": 50.0}
    trials = [_trial(0, 1000, 1000), _trial(1, 1000, 500, "stall", [lossy]), _trial(2, 1000, 990)]
    s = series.summary(trials, 0.005, 4)
    assert (s.sent, s.forwarded, s.segments_excluded) == (2000, 1990, 1)
    assert s.loss_ratio == pytest.approx(0.005) and s.verdict == series.INCONCLUSIVE
    assert s.events == [] and s.finished is False  # the excluded second is a gap
    assert s.loss_location == {"sut_egress": 10}
    assert series.timeline(trials) == [{**lossy, "gap": True}]


LOADS = [("200k", "200k"), ("90%pdr", "90%pdr"), ("90.5%PDR", "90.5%pdr"), ("1.5M", "1.5m")]


@pytest.mark.parametrize(("text", "want"), LOADS)
def test_a_load_is_a_rate_or_a_share_of_the_pdr(text, want):
    assert parse_load(text) == want


def test_pdr_share():
    assert pdr_share("90%pdr") == pytest.approx(0.9) and pdr_share("200k") is None


@pytest.mark.parametrize("bad", ["90%", "0%pdr", "300%pdr", "pdr", "-5k", "fast"])
def test_a_bad_load_is_refused(bad):
    with pytest.raises(UsageError):
        parse_load(bad)


def test_goals():
    assert parse_goal("ndr") == 0 and parse_goal("pdr") == 0.005
    assert parse_goal("0.5%") == pytest.approx(0.005) and parse_goal("0") == 0
    with pytest.raises(UsageError):
        parse_goal("2")


@pytest.mark.parametrize(("kw", "why"), [
    ({"rate": None}, "--rate is required"),
    ({"segment_s": 0.5}, "too short"),
    ({"segment_s": 20.0, "duration_s": 10.0}, "longer than --duration"),
    ({"duration_s": 8 * 86400.0}, "too long"),
])  # fmt: skip
def test_a_request_that_makes_no_sense_is_refused(kw, why):
    with pytest.raises(UsageError, match=why):
        SoakRequest(**{"rate": "100k", **kw}).validate()


class _Bed:
    """A testbed's ``send`` as the trial engine sees it: blocks for the send's time."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def send(self, rate_pps, duration_s, *args):
        self.calls.append((rate_pps, duration_s, *args))
        time.sleep(duration_s)
        return len(self.calls)


def test_both_generators_are_read_as_one_run_of_the_sampler():
    """--bidirectional: two sends at once (as trial.bidirectional.send_both), one read
    every second from the first's start to the last's end; a one-way send as before."""
    reads = iter(range(1000))
    sampler = Sampler(lambda: next(reads))
    bed = SampledBed(_Bed(), sampler)
    with ThreadPoolExecutor(2) as pool:
        fwd = pool.submit(bed.send, 1000, 1.6, False, True)
        time.sleep(0.1)
        rev = pool.submit(bed.send, 1000, 1.6, True, True)
        fwd.result(), rev.result()
    times = [t for t, _, _ in sampler.samples]
    assert times[0] == 0.0 and times[-1] >= 1.65  # the last send ended ~1.7 s after start
    assert len(times) == 3, sampler.samples  # its start, one second, its end: one run
    assert sorted(c[2] for c in bed._tb.calls) == [False, True]
    one = SampledBed(_Bed(), Sampler(lambda: 0))
    one.send(1000, 0.2)
    assert len(one.sampler.samples) == 2 and one._sending == 0
