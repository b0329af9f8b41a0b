"""The XDP sink's latency histogram as read (SinkHist) and latency per load over runs."""

from __future__ import annotations

import math

import pytest

from netassay.analysis import latency
from netassay.hist import SinkHist


def _doc(values_us: list[int]) -> dict:
    """A sink line's latency object for these latencies (1 us buckets, as below 256 us)."""
    counts: dict[int, int] = {}
    for v in values_us:
        counts[v] = counts.get(v, 0) + 1
    ns = [v * 1000 + 500 for v in values_us]
    return {
        "n": len(ns), "sum_ns": sum(ns), "min_ns": min(ns), "max_ns": max(ns), "ahead": 0,
        "buckets": [[v * 1000, v * 1000 + 1000, c] for v, c in sorted(counts.items())],
    }  # fmt: skip


def test_percentiles_are_the_nearest_rank_bucket_midpoint():
    h = SinkHist(_doc(list(range(1, 101))))  # 1..100 us, one frame each
    s = h.summary()
    assert s["n"] == 100 and s["mean_ns"] == pytest.approx(51_000)
    assert s["p50_ns"] == 50_500  # rank 50: the bucket [50, 51) us
    assert s["p90_ns"] == 90_500
    assert s["p99_ns"] == 99_500
    assert s["p999_ns"] == 100_500  # rank 100: the last frame (clamped to the max)
    assert (s["min_ns"], s["max_ns"]) == (1_500, 100_500)


def test_the_overflow_bucket_reads_as_the_maximum():
    over = [1_048_576_000, None, 1]  # the open last bucket
    doc = {"n": 2, "sum_ns": 3_000_000_000, "min_ns": 1_000_000_000, "max_ns": 2_000_000_000,
           "ahead": 1, "buckets": [[1_000_000, 1_008_000, 1], over]}  # fmt: skip
    h = SinkHist(doc)
    assert h.percentile(50) == 1_000_000_000  # the midpoint clamped up to the minimum
    assert h.percentile(100) == 2_000_000_000
    assert h.summary()["ahead"] == 1
    assert SinkHist(h.to_json()).summary() == h.summary()


def test_merge_adds_counts_and_keeps_the_extremes():
    a, b = SinkHist(_doc([5, 5, 9])), SinkHist(_doc([2, 5]))
    m = SinkHist().merge(a).merge(b)
    assert (m.n, m.min_ns, m.max_ns, m.sum_ns) == (5, 2_500, 9_500, a.sum_ns + b.sum_ns)
    assert m.buckets[5_000] == (6_000, 3)
    assert SinkHist().merge(SinkHist()).summary()["p50_ns"] is None


def test_by_load_is_the_mean_over_runs_with_a_t_interval():
    # load 0: three runs whose medians are 10, 12 and 14 us; load 1: one run
    trials = [(0, 1e4, _doc([10] * 9)), (0, 1e4, _doc([12] * 9)), (0, 1e4, _doc([14] * 9)),
              (1, 5e4, _doc([30, 40])), (2, 9e4, {"n": 0, "buckets": []})]  # fmt: skip
    rows = latency.by_load(trials)
    assert [r.load_index for r in rows] == [0, 1]  # a histogram without frames is no run
    r0 = rows[0]
    assert r0.runs == 3 and r0.mean["p50_ns"] == pytest.approx(12_500)
    half = 4.302652729911275 * 2_000 / math.sqrt(3)  # t(2, 0.975) * sd / sqrt(K)
    assert r0.ci95["p50_ns"] == pytest.approx(half)
    assert r0.merged.n == 27
    assert rows[1].ci95["p50_ns"] is None and rows[1].mean["max_ns"] == 40_500
    j = rows[0].to_json()
    assert j["p50_ns"] == pytest.approx(12_500) and j["frames"] == 27
    text = "\n".join(latency.lines(rows))
    assert "12.5+-5.0" in text and "40.5" in text
    assert latency.lines([]) == ["latency: no trial holds a latency histogram"]


def test_at_takes_0_and_shares_of_the_pdr():
    from netassay.errors import UsageError
    from netassay.methods.sweep.request import parse_shares

    assert parse_shares("90%,0,10%,50%,10%") == (0.0, 0.1, 0.5, 0.9)
    assert parse_shares("100%") == (1.0,)
    for bad in ("10", "110%", "-5%", "x%", "", "0,,5%"):
        with pytest.raises(UsageError, match="bad --at"):
            parse_shares(bad)
