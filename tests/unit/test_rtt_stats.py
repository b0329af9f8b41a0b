"""Run-level statistics of rtt: bootstrap CI, effect sizes, the tests scipy runs."""

from __future__ import annotations

import math

import pytest

from netassay.analysis import effects


def test_bootstrap_ci_brackets_the_median_and_is_reproducible():
    runs = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]
    lo, hi = effects.bootstrap_median_ci(runs)
    assert lo <= 14.5 <= hi and lo >= 10 and hi <= 19
    assert effects.bootstrap_median_ci(runs) == (lo, hi)
    assert effects.bootstrap_median_ci([1.0, 2.0]) is None  # two runs: no interval
    assert effects.bootstrap_median_ci([5.0, 5.0, 5.0]) == (5.0, 5.0)


def test_over_runs():
    s = effects.over_runs([3.0, None, 1.0, 2.0])
    assert s["runs"] == 3 and s["median"] == 2.0 and s["min"] == 1.0 and s["max"] == 3.0
    assert effects.over_runs([])["median"] is None


def test_cliffs_delta_and_hodges_lehmann_by_hand():
    a, b = [1, 2, 3], [2, 3, 4]
    # pairs a>b: (3,2); a<b: (1,2),(1,3),(1,4),(2,3),(2,4),(3,4) -> (1 - 6) / 9
    assert effects.cliffs_delta(a, b) == pytest.approx(-5 / 9)
    assert effects.cliffs_delta([5, 6], [1, 2]) == 1.0
    assert effects.hodges_lehmann([10, 11], [1, 2]) == 9.0
    assert effects.magnitude(0.1) == "negligible" and effects.magnitude(-0.5) == "large"
    assert effects.magnitude(0.3) == "small" and effects.magnitude(0.4) == "medium"


def test_mann_whitney_separated_samples():
    r = effects.mann_whitney([1, 2, 3, 4, 5], [11, 12, 13, 14, 15])
    assert r["u"] == 0.0 and r["p"] < 0.01 and r["cliffs_delta"] == -1.0
    assert r["effect"] == "large" and r["hodges_lehmann"] == -10.0
    assert effects.mann_whitney([1], [2, 3])["p"] is None


def test_wilcoxon_paired():
    a = [10, 12, 14, 16, 18, 20, 22]
    b = [x - d for x, d in zip(a, [1, 2, 3, 4, 5, 6, 7], strict=True)]
    r = effects.wilcoxon_paired(a, b)
    assert r["n"] == 7 and r["median_difference"] == 4.0 and r["p"] < 0.05
    same = effects.wilcoxon_paired([1, 2, 3], [1, 2, 3])
    assert same["p"] is None and same["median_difference"] == 0.0


def test_kendall_trend():
    r = effects.kendall_trend([0, 8, 32, 64, 128], [1.0, 1.5, 2.0, 4.0, 9.0])
    assert r["tau_b"] == pytest.approx(1.0) and r["p"] < 0.05
    down = effects.kendall_trend([0, 0, 8, 8], [5.0, 6.0, 1.0, 2.0])
    assert down["tau_b"] < 0
    assert effects.kendall_trend([8, 8, 8], [1.0, 2.0, 3.0])["tau_b"] is None
    assert math.isnan(effects.cliffs_delta([], [1]))


def test_hold_growth_pairs_runs_so_that_a_drift_falls_out():
    # the machine drifts by 10 per run; a hold of 200 lies on top of it, plus one
    # run's noise in the held values
    base = [100.0 + 10 * i for i in range(5)]
    held = [b + 200 + (7 if i == 2 else 0) for i, b in enumerate(base)]
    g = effects.hold_growth(base, held, 200)
    assert g["pairs"] == 5 and g["paired_ns"] == 200 and g["paired_error_ns"] == 0
    assert g["medians_ns"] == 207 and g["medians_error_ns"] == 7
    # a drift that falls on one hold only (runs not interleaved) shows in both
    late = effects.hold_growth(base, [b + 230 for b in base], 200)
    assert late["paired_error_ns"] == late["medians_error_ns"] == 30
    assert effects.hold_growth([], [1.0], 5)["paired_ns"] is None
