"""A campaign's experiments side by side, and each factor's effect on PDR (pure).

One experiment (a cell in a block) gives one PDR; the repetitions of a cell are the
sample. The same tests serve any other figure of an experiment (``metric``: an
acceptance test's throughput or loss ratio), with the same rules. For each factor the
test fits the data and is named in the output:

- an ordered factor (numbers: backlog, a count, a cap) with three levels or more:
  Kendall's tau-b of PDR against the level;
- two levels, repetitions paired by block (the same block and the same other factors at
  both levels, two blocks or more): the Wilcoxon signed-rank test on the paired
  differences, with the Hodges-Lehmann shift of the pairs (the median of their Walsh
  averages);
- otherwise, each level against the first: Mann-Whitney U for two independent groups.

Every comparison carries an effect size (Cliff's delta with its magnitude, the
Hodges-Lehmann shift in the metric's unit: ``hodges_lehmann_pps`` for PDR,
``hodges_lehmann_bps`` for throughput, ``hodges_lehmann_ratio`` for a loss ratio) and
the number of experiments behind it: never a bare p-value. scipy runs the tests
(``netassay.analysis.effects`` wraps them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import numpy as np

from netassay.analysis.effects import (
    cliffs_delta,
    hodges_lehmann,
    kendall_trend,
    magnitude,
    mann_whitney,
    wilcoxon_paired,
)


def hodges_lehmann_paired(diffs: Sequence[float]) -> float | None:
    """The one-sample Hodges-Lehmann estimate: the median of the Walsh averages
    (d_i + d_j) / 2, i <= j, of paired differences."""
    d = np.asarray(diffs, dtype=float)
    if d.size == 0:
        return None
    i, j = np.triu_indices(d.size)
    return float(np.median((d[i] + d[j]) / 2))


def _median(v: Sequence[float]) -> float | None:
    return float(np.median(v)) if len(v) else None


class Summary(TypedDict):
    """The values of a figure that exist, summed up (``summarize``)."""

    n: int
    median: float | None
    min: float | None
    max: float | None
    iqr: list[float] | None


def summarize(values: Sequence[float | None]) -> Summary:
    """n, median, min, max and the interquartile range of the values that exist."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return {"n": 0, "median": None, "min": None, "max": None, "iqr": None}
    q1, q3 = np.quantile(v, [0.25, 0.75])
    return {
        "n": len(v),
        "median": float(np.median(v)),
        "min": min(v),
        "max": max(v),
        "iqr": [float(q1), float(q3)],
    }


PDR = "pdr_pps"
P99_AT_PDR = "p99_at_pdr_ns"  # a search's one-way latency at its PDR (search --latency)
LAB_FIGURES = ("pdr_pps", "ndr_pps")  # a sweep's or a search's figures, PDR first
LAB_NAMES = {"pdr_pps": ("PDR", 1e3, "PDR@0.5% (kpps)"), "ndr_pps": ("NDR", 1e3, "NDR (kpps)")}


def shift_key(metric: str) -> str:
    """The key of the Hodges-Lehmann shift, in the metric's unit (its name's suffix)."""
    return f"hodges_lehmann_{metric.rsplit('_', 1)[-1]}"


def groups(
    rows: Sequence[dict[str, Any]],
    by: Sequence[str],
    order: Callable[[str, Any], Any],
    figures: Sequence[str] = LAB_FIGURES,
    lowest_first: bool = False,
) -> list[dict[str, Any]]:
    """Experiments grouped by the levels of ``by``, each of ``figures`` summarized, ranked
    by the first figure's median (highest first: PDR, throughput; lowest first when
    ``lowest_first``: a round-trip time)."""
    bucket: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        bucket.setdefault(tuple(r["factors"].get(f) for f in by), []).append(r)
    out = []
    for levels, members in bucket.items():
        verdicts: dict[str, int] = {}
        for m in members:
            v = m["verdict"] or "no verdict"
            verdicts[v] = verdicts.get(v, 0) + 1
        g: dict[str, Any] = {
            "levels": dict(zip(by, levels, strict=True)),
            "experiments": len(members),
            **{f: summarize([m.get(f) for m in members]) for f in figures},
            "verdicts": verdicts,
            "cpu_busy": _mean_cpu([m["cpu_busy"] for m in members]),
        }
        for f in figures:  # a median over lower bounds (the max load met the goal) is one
            if any(m.get(bound_key(f)) for m in members):
                g[f]["at_least"] = True
        if any("worst_delta_ucl95_below_pdr" in m for m in members):
            worst = [m.get("worst_delta_ucl95_below_pdr") for m in members]
            g["worst_delta_ucl95_below_pdr"] = max(
                (w for w in worst if w is not None), default=None
            )
        out.append(g)
    out.sort(key=lambda g: [order(f, g["levels"][f]) for f in by])
    sign = 1 if lowest_first else -1
    ranked = sorted(
        out,
        key=lambda g: (
            math.inf if g[figures[0]]["median"] is None else sign * g[figures[0]]["median"]
        ),
    )
    for rank, g in enumerate(ranked, 1):
        g["rank"] = rank
    return out


def _mean_cpu(per: Sequence[dict[str, float]]) -> dict[str, float]:
    cores = sorted({c for p in per for c in p}, key=lambda c: (len(c), c))
    return {c: round(float(np.mean([p[c] for p in per if c in p])), 4) for c in cores}


def _pairs(
    rows: Sequence[dict[str, Any]], factor: str, a: Any, b: Any, metric: str = PDR
) -> list[tuple[float, float]]:
    """(metric at a, metric at b) of experiments alike in block and every other factor; [] when
    some experiment has no such partner or there is a single block."""

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        other = tuple(sorted((k, repr(v)) for k, v in r["factors"].items() if k != factor))
        return (r["block"], other)

    at_a = {key(r): r for r in rows if r["factors"].get(factor) == a}
    at_b = {key(r): r for r in rows if r["factors"].get(factor) == b}
    blocks = {r["block"] for r in rows}
    if len(blocks) < 2 or set(at_a) != set(at_b) or not at_a:
        return []
    pairs = [(at_a[k][metric], at_b[k][metric]) for k in at_a]
    return [(x, y) for x, y in pairs if x is not None and y is not None]


def _at(rows: Sequence[dict[str, Any]], factor: str, level: Any, metric: str) -> list[float]:
    return [r[metric] for r in rows if r["factors"].get(factor) == level and r[metric] is not None]


def _versus(
    rows: Sequence[dict[str, Any]], factor: str, a: Any, b: Any, metric: str = PDR
) -> dict[str, Any]:
    """Level ``b`` against level ``a``: the test, its effect sizes and the counts."""
    xa, xb = _at(rows, factor, a, metric), _at(rows, factor, b, metric)
    pairs = _pairs(rows, factor, a, b, metric)
    out: dict[str, Any] = {"level": b, "against": a, "n_a": len(xa), "n_b": len(xb)}
    if pairs:
        w = wilcoxon_paired([p[1] for p in pairs], [p[0] for p in pairs])
        d = [p[1] - p[0] for p in pairs]
        out.update(
            test="Wilcoxon signed-rank",
            paired=True,
            n_pairs=len(pairs),
            statistic=w["w"],
            p=w["p"],
            **{shift_key(metric): hodges_lehmann_paired(d)},
        )
    else:
        m = mann_whitney(xb, xa)
        hl = hodges_lehmann(xb, xa) if xa and xb else None
        out.update(
            test="Mann-Whitney U",
            paired=False,
            statistic=m["u"],
            p=m["p"],
            **{shift_key(metric): hl},
        )
    delta = cliffs_delta(xb, xa) if xa and xb else float("nan")
    out["cliffs_delta"] = delta if math.isfinite(delta) else None
    out["effect"] = magnitude(delta)
    if out["p"] is None:
        out["note"] = "too few experiments for a p-value (a test needs two or more per side)"
    out["bound"] = bound(rows, factor, a, b, metric)
    return out


BOUNDS = {  # what a comparison's shift and delta are when some of its values are bounds
    "at_least": "at least these: {b}'s values include lower bounds",
    "at_most": "at most these: {a}'s values include lower bounds",
    "unknown": "not known: both levels' values include lower bounds",
}


def bound_key(metric: str) -> str:
    """The key that marks a cell's ``metric`` as only a lower bound: ``pdr_at_least``
    for ``pdr_pps`` (the search's highest load met the goal), ``mean_frames_at_least``
    for ``mean_frames`` (a burst test forwarded the longest burst tried)."""
    return (metric.removesuffix("_pps") if metric.endswith("_pps") else metric) + "_at_least"


def bound(rows: Sequence[dict[str, Any]], factor: str, a: Any, b: Any, metric: str) -> str | None:
    """Whether level ``b`` against ``a`` is a bound (None: every value is a measure).
    A rate whose search's highest load met the goal is only a lower bound, as is a burst
    test's result at the longest burst tried (``bound_key``); every difference b - a, so
    the Hodges-Lehmann shift (a median of them) and Cliff's delta, can then only be
    larger than computed when b holds such bounds (``at_least``), smaller when a does
    (``at_most``), and either when both do (``unknown``)."""
    flag = bound_key(metric)

    def censored(level: Any) -> bool:
        return any(r.get(flag) for r in rows
                   if r["factors"].get(factor) == level and r[metric] is not None)  # fmt: skip

    lower_a, lower_b = censored(a), censored(b)
    if lower_a and lower_b:
        return "unknown"
    return "at_least" if lower_b else "at_most" if lower_a else None


def effect(
    rows: Sequence[dict[str, Any]],
    factor: str,
    levels: Sequence[Any],
    ordinal: bool,
    number: Callable[[Any], float],
    metric: str = PDR,
) -> dict[str, Any]:
    """The factor's effect on ``metric`` (PDR unless said): each level against the first
    (and, for an ordered factor of three levels or more, Kendall's tau-b over all of
    them)."""
    have = [r for r in rows if factor in r["factors"]]
    per_level = [
        {"level": lv, **summarize([r[metric] for r in have if r["factors"][factor] == lv])}
        for lv in levels
    ]
    out: dict[str, Any] = {
        "factor": factor,
        "metric": metric,
        "ordinal": ordinal,
        "levels": per_level,
        "experiments": len(have),
    }
    if ordinal and len(levels) >= 3:
        pts = [(number(r["factors"][factor]), r[metric]) for r in have if r[metric] is not None]
        k = kendall_trend([p[0] for p in pts], [p[1] for p in pts])
        out["trend"] = {"test": "Kendall tau-b", "n": k["n"], "tau_b": k["tau_b"], "p": k["p"]}
        out["test"] = "Kendall tau-b"
    out["comparisons"] = [_versus(have, factor, levels[0], lv, metric) for lv in levels[1:]]
    if "test" not in out:
        tests = {c["test"] for c in out["comparisons"]}
        out["test"] = " / ".join(sorted(tests)) if tests else None
    return out
