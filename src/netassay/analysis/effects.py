"""Run-level statistics of RTT measurements (pure: numbers in, numbers out).

Runs, not probes, are the unit: a configuration's value of a statistic is the median
over its runs of that statistic, with a bootstrap confidence interval over runs.
Comparisons use scipy's tests on per-run values and report effect sizes beside the
p-values: Mann-Whitney U with Cliff's delta and the Hodges-Lehmann shift for two
independent configurations, the Wilcoxon signed-rank test with the median paired
difference for paired data (runs paired by position, or the same probes at two
capture points), and Kendall's tau-b for a trend against the number of background
loads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NotRequired, TypedDict

import numpy as np

BOOT = 10_000
SEED = 20240602  # fixed: the same runs give the same interval


def bootstrap_median_ci(
    values: Sequence[float], level: float = 0.95, n_boot: int = BOOT, seed: int = SEED
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the median of ``values`` (resampled with replacement);
    None with fewer than 3 values (an interval from two runs says nothing)."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size < 3:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(n_boot, v.size))
    meds = np.median(v[idx], axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(meds, [alpha, 1 - alpha])
    return float(lo), float(hi)


class OverRuns(TypedDict):
    """A per-run statistic over runs (``over_runs``): as stored and shown in JSON."""

    runs: int
    median: float | None
    ci95: tuple[float, float] | None
    min: float | None
    max: float | None


class HoldGrowth(TypedDict):
    """How much a value grew with a hold (``hold_growth``), in ns, and the errors."""

    hold_ns: float
    pairs: int
    paired_ns: float | None
    paired_error_ns: float | None
    medians_ns: float | None
    medians_error_ns: float | None


def over_runs(values: Sequence[float | None]) -> OverRuns:
    """Median over runs of a per-run statistic, its bootstrap 95% CI, min, max, count."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return {"runs": 0, "median": None, "ci95": None, "min": None, "max": None}
    return {
        "runs": len(v),
        "median": float(np.median(v)),
        "ci95": bootstrap_median_ci(v),
        "min": min(v),
        "max": max(v),
    }


def cliffs_delta(a: Sequence[float], b: Sequence[float]) -> float:
    """P(a > b) - P(a < b) over all pairs: -1..1, 0 when neither tends to be larger."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        return float("nan")
    diff = x[:, None] - y[None, :]
    return float((np.sign(diff)).mean())


def hodges_lehmann(a: Sequence[float], b: Sequence[float]) -> float:
    """The median of all pairwise differences a_i - b_j: the shift of a over b."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.median((x[:, None] - y[None, :]).ravel()))


def magnitude(delta: float) -> str:
    """Romano et al.'s thresholds for |Cliff's delta|."""
    d = abs(delta)
    if not math.isfinite(d):
        return "n/a"
    for limit, word in ((0.147, "negligible"), (0.33, "small"), (0.474, "medium")):
        if d < limit:
            return word
    return "large"


class MannWhitney(TypedDict):
    """Two independent samples' test (``mann_whitney``): None where a side has under 2."""

    test: Literal["Mann-Whitney U"]
    n_a: int
    n_b: int
    u: float | None
    p: float | None
    cliffs_delta: float | None
    effect: NotRequired[str]  # Cliff's delta in words, where there is one
    hodges_lehmann: float | None


class Wilcoxon(TypedDict):
    """Paired samples' test (``wilcoxon_paired``): None where there is no difference."""

    test: Literal["Wilcoxon signed-rank"]
    n: int
    w: float | None
    p: float | None
    median_difference: float | None


class KendallTrend(TypedDict):
    """A statistic's trend against a count (``kendall_trend``): None under 3 points."""

    test: Literal["Kendall tau-b"]
    n: int
    tau_b: float | None
    p: float | None


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two independent samples (runs of two configurations)."""
    x, y = list(a), list(b)
    out: MannWhitney = {"test": "Mann-Whitney U", "n_a": len(x), "n_b": len(y), "u": None,
                        "p": None, "cliffs_delta": None, "hodges_lehmann": None}  # fmt: skip
    if len(x) < 2 or len(y) < 2:
        return out
    from scipy import stats as sps  # deferred: scipy.stats (0.4 s), only where a test runs

    r = sps.mannwhitneyu(x, y, alternative="two-sided")
    d = cliffs_delta(x, y)
    return {"test": "Mann-Whitney U", "n_a": len(x), "n_b": len(y), "u": float(r.statistic),
            "p": float(r.pvalue), "cliffs_delta": d, "effect": magnitude(d),
            "hodges_lehmann": hodges_lehmann(x, y)}  # fmt: skip


def wilcoxon_paired(a: Sequence[float], b: Sequence[float]) -> Wilcoxon:
    """Paired samples: the same runs' (or probes') values under two conditions."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = min(x.size, y.size)
    x, y = x[:n], y[:n]
    diff = x - y
    out: Wilcoxon = {"test": "Wilcoxon signed-rank", "n": int(n), "w": None, "p": None,
                     "median_difference": float(np.median(diff)) if n else None}  # fmt: skip
    if n < 2 or not np.any(diff):
        return out
    from scipy import stats as sps  # deferred: scipy.stats (0.4 s), only where a test runs

    r = sps.wilcoxon(x, y, zero_method="wilcox", alternative="two-sided")
    return {**out, "w": float(r.statistic), "p": float(r.pvalue),
            "median_difference": float(np.median(diff))}  # fmt: skip


def hold_growth(base: Sequence[float], held: Sequence[float], hold_ns: float) -> HoldGrowth:
    """The responder-delay ground truth from per-run values (e.g. each run's response
    p50) with no hold (``base``) and with a hold of ``hold_ns`` (``held``), the runs of
    the two interleaved so that run i of each is adjacent in time: how much the value
    grew, as the median of the per-pair differences (``paired``: the machine's drift
    between runs falls out) and as the difference of the medians over runs
    (``medians``), and each one's error against the hold."""
    x, y = np.asarray(held, dtype=float), np.asarray(base, dtype=float)
    n = min(x.size, y.size)
    if n == 0:
        return {"hold_ns": hold_ns, "pairs": 0, "paired_ns": None, "paired_error_ns": None,
                "medians_ns": None, "medians_error_ns": None}  # fmt: skip
    paired = float(np.median(x[:n] - y[:n]))
    medians = float(np.median(x) - np.median(y))
    return {"hold_ns": hold_ns, "pairs": int(n), "paired_ns": paired,
            "paired_error_ns": paired - hold_ns, "medians_ns": medians,
            "medians_error_ns": medians - hold_ns}  # fmt: skip


def kendall_trend(counts: Sequence[float], values: Sequence[float]) -> KendallTrend:
    """Kendall's tau-b of a statistic against the number of background loads."""
    x, y = list(counts), list(values)
    out: KendallTrend = {"test": "Kendall tau-b", "n": len(x), "tau_b": None, "p": None}
    if len(x) < 3 or len(set(x)) < 2:
        return out
    from scipy import stats as sps  # deferred: scipy.stats (0.4 s), only where a test runs

    r = sps.kendalltau(x, y, variant="b")
    tau = float(r.statistic)
    return {**out, "tau_b": tau if math.isfinite(tau) else None,
            "p": float(r.pvalue) if math.isfinite(r.pvalue) else None}  # fmt: skip
