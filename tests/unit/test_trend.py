"""The trend's pure parts on seeded series: a known 10% step is found at its run and
sized (a fall of a rate and a rise of a time are regressions), noise alone is one group,
BAD and INCONCLUSIVE points are kept and marked but judged only with --all, and the
--fail-on-regression threshold; what makes two experiments one configuration."""

from __future__ import annotations

import numpy as np
import pytest

from netassay.analysis import trend
from netassay.cli.trend import parse_threshold
from netassay.errors import UsageError
from netassay.report import series
from netassay.store.db import Experiment

STEP_AT, N = 12, 24


def _series(values, verdicts=None):
    verdicts = verdicts or [None] * len(values)
    return [
        trend.Point(x=f"2026-11-25T10:{i:02d}:00", value=float(v), experiment_id=i + 1, verdict=d)
        for i, (v, d) in enumerate(zip(values, verdicts, strict=True))
    ]


def _stepped(seed, factor, noise=0.02, base=100_000.0):
    v = base * (1 + noise * np.random.default_rng(seed).standard_normal(N))
    v[STEP_AT:] *= factor
    return v


@pytest.mark.parametrize("seed", range(5))
def test_a_10pct_fall_of_a_rate_is_a_regression_at_its_run(seed):
    values = _stepped(seed, 0.9)
    t = trend.trend(_series(values), "pdr_pps")
    assert [g.change for g in t.groups] == ["first", "regression"]
    (change,) = t.changes
    assert (change.first, change.last) == (STEP_AT, N - 1)
    assert change.relative == pytest.approx(-0.10, abs=0.02)
    before, after = values[:STEP_AT], values[STEP_AT:]
    assert t.groups[0].average == pytest.approx(np.mean(before))  # each group's own
    assert t.groups[1].stdev == pytest.approx(np.std(after))  # spread (population)
    assert change.relative == pytest.approx(np.mean(after) / np.mean(before) - 1)
    assert t.newest is change and t.worse_by() == pytest.approx(0.10, abs=0.02)


@pytest.mark.parametrize("seed", range(5))
def test_a_10pct_rise_of_a_rate_is_a_progression(seed):
    t = trend.trend(_series(_stepped(seed, 1.1)), "mrr_pps")
    (change,) = t.changes
    assert change.change == "progression" and change.first == STEP_AT
    assert change.relative == pytest.approx(0.10, abs=0.02)
    assert t.worse_by() == 0.0 and not t.regression_beyond(0.0)


def test_for_a_time_a_rise_is_the_regression_and_a_fall_the_progression():
    up = trend.trend(_series(_stepped(3, 1.1, base=40_000.0)), "rtt_p50_ns")
    down = trend.trend(_series(_stepped(3, 0.9, base=40_000.0)), "rtt_p50_ns")
    assert [c.change for c in up.changes] == ["regression"] and up.changes[0].first == STEP_AT
    assert [c.change for c in down.changes] == ["progression"]
    assert up.regression_beyond(0.05) and not down.regression_beyond(0.05)


@pytest.mark.parametrize("seed", range(20))
def test_noise_alone_is_one_group(seed):
    t = trend.trend(_series(_stepped(seed, 1.0)), "pdr_pps")
    assert len(t.groups) == 1 and t.changes == [] and t.groups[0].change == "first"
    assert not t.regression_beyond(0.0)


def test_bad_and_inconclusive_points_are_marked_and_judged_only_with_all():
    values = list(_stepped(1, 1.0)[:16]) + [60_000.0] * 4  # the last four: half the PDR
    verdicts = ["GOOD"] * 16 + ["BAD", "INCONCLUSIVE", "BAD", "BAD"]
    t = trend.trend(_series(values, verdicts), "pdr_pps")
    assert len(t.points) == 20 and [p.mark for p in t.points[16:]] == verdicts[16:]
    assert [p.used for p in t.points] == [True] * 16 + [False] * 4
    assert len(t.groups) == 1 and t.groups[0].last == 15 and t.changes == []
    everything = trend.trend(_series(values, verdicts), "pdr_pps", include_all=True)
    assert all(p.used for p in everything.points) and everything.points[16].mark == "BAD"
    (change,) = everything.changes
    assert change.change == "regression" and change.first == 16
    assert change.relative == pytest.approx(-0.4, abs=0.02)


def test_a_point_without_a_figure_is_kept_and_marked():
    pts = _series([100.0, 101.0, 99.0, 100.0])
    pts[1] = trend.Point(x="b", value=None, experiment_id=9)
    t = trend.trend(pts, "pdr_pps")
    assert t.points[1].mark == "no value" and not t.points[1].used
    assert (t.groups[0].first, t.groups[0].last, t.groups[0].points) == (0, 3, 3)


def test_a_short_series_says_so():
    t = trend.trend(_series([100.0, 90.0], ["GOOD", "BAD"]), "pdr_pps")
    assert not t.judged and t.groups == [] and t.newest is None
    assert t.note == "too short to judge: 1 trustworthy point(s), 3 needed"
    assert not t.regression_beyond(0.0) and t.as_dict()["newest"] is None


def test_the_threshold_gates_only_a_regression_at_least_that_large():
    t = trend.trend(_series(_stepped(0, 0.9)), "pdr_pps")
    worse = t.worse_by()
    assert 0.08 < worse < 0.12
    assert t.regression_beyond(0.05) and t.regression_beyond(worse)
    assert not t.regression_beyond(0.2) and not t.regression_beyond(worse + 1e-9)
    earlier = trend.trend(_series(list(_stepped(0, 0.9)) + [100_000.0] * 12), "pdr_pps")
    assert [c.change for c in earlier.changes] == ["regression", "progression"]
    assert not earlier.regression_beyond(0.0)  # the newest group recovered


def test_a_loss_ratio_from_zero_and_all_zero():
    clean = trend.trend(_series([0.0] * 6), "loss_ratio")  # jumpavg cannot size all-zero
    assert [(g.first, g.last, g.average, g.change) for g in clean.groups] == [(0, 5, 0.0, "first")]
    assert not clean.regression_beyond(0.0)
    lossy = trend.trend(_series([0.0] * 4 + [0.01] * 4), "loss_ratio")
    (change,) = lossy.changes
    assert (change.first, change.change, change.relative, change.size()) == (
        4, "regression", None, "from 0"
    )  # fmt: skip
    assert lossy.worse_by() is None and lossy.regression_beyond(0.5)  # beyond any threshold


def test_threshold_flag():
    assert parse_threshold("5%") == pytest.approx(0.05) and parse_threshold("0.1") == 0.1
    for bad in ("x", "-1%", "100%", "2"):
        with pytest.raises(UsageError, match="bad --threshold"):
            parse_threshold(bad)


def test_metric_names_and_directions():
    keys = ["pdr_pps", "ndr_pps", "rtt_p50_ns", "throughput_bps", "loss_ratio", "failed_seconds"]
    assert [trend.short_name(k) for k in keys] == [
        "pdr", "ndr", "rtt_p50", "throughput", "loss", "failed_seconds"
    ]  # fmt: skip
    assert trend.metric_key("rtt_p50", keys) == "rtt_p50_ns" and trend.metric_key("pdr_pps", keys)
    assert trend.metric_key("mrr", keys) is None
    assert [trend.higher_is_better(k) for k in keys] == [True, True, False, True, False, False]


def test_versions_in_order():
    kernels = ["6.8", "5.15", None, "5.6", "5.13", "6.18.44-fc-v669"]
    assert sorted(kernels, key=trend.natural) == [
        "5.6",
        "5.13",
        "5.15",
        "6.8",
        "6.18.44-fc-v669",
        None,
    ]


def _exp(i, cap, kernel, name="lab", utc="2026-11-25T10:00:00"):
    return Experiment(
        id=i, key=f"k{i}", kind="mrr", source="netassay-testbed", label=f"e{i}",
        created_utc=utc, tool_version="0.1.0",
        config={"runs": 3, "testbed": {"sut_cap_pps": cap}, "testbed_name": name},
        metadata={"sut_cap_pps": cap, "kernel": kernel, "campaign": {"block": i}},
        environment={"kernel": kernel},
    )  # fmt: skip


def test_a_configuration_leaves_out_the_kernel_and_the_testbed_name():
    a, b, c = _exp(1, 1e5, "6.8", "x"), _exp(2, 1e5, "6.18", "y"), _exp(3, 2e5, "6.8")
    assert series.configuration(a) == series.configuration(b) != series.configuration(c)
    assert series.factor(b, "kernel") == "6.18" and series.factor(a, "time") == a.created_utc
    assert series.factor(c, "sut_cap_pps") == 2e5 and series.factor(a, "nothing") is None
    by_cap = series.configuration(a, "sut_cap_pps")
    assert (
        by_cap == series.configuration(c, "sut_cap_pps") and "sut_cap_pps" not in by_cap["settings"]
    )
