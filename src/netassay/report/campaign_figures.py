"""A campaign page's figures (``report.campaign``): each cell's figure per factor level,
CPU use per cell or per load, and where each cell's packets were lost per load."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from netassay import methods as registry
from netassay.analysis.compare import P99_AT_PDR, bound_key
from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS
from netassay.shared.loss_located import COLORS, LABELS, pct
from netassay.shared.plots import save

CpuPerLoad = dict[str, dict[float, list[tuple[float, float]]]]  # core -> load -> (busy, steal)


def plot_pdr_by_factor(result: dict[str, Any], metric: str, stem: Path) -> tuple[Path, Path]:
    """One panel per factor: each experiment's PDR (or ``metric``: an acceptance test's
    throughput, an rtt cell's RTT p50) at its level, the median and range."""
    effects = [e for e in result["effects"] if e.get("metric", "pdr_pps") == metric]
    _, scale, ylabel = registry.metric(metric)
    fig, axes = plt.subplots(
        1, max(1, len(effects)), figsize=(3.2 * max(1, len(effects)), 3.2), squeeze=False
    )
    rng = np.random.default_rng(0)
    for ax, e in zip(axes[0], effects, strict=False):
        f = e["factor"]
        for x, lv in enumerate(e["levels"]):
            ys = [
                r[metric] / scale
                for r in result["experiments"]
                if r["factors"].get(f) == lv["level"] and r[metric] is not None
            ]
            ax.scatter(x + rng.uniform(-0.08, 0.08, len(ys)), ys, s=14, color="#0969da")
            if ys:
                ax.plot([x, x], [min(ys), max(ys)], color="#57606a", lw=1)
                ax.plot([x - 0.2, x + 0.2], [np.median(ys)] * 2, color="#cf222e", lw=2)
        ax.set_xticks(range(len(e["levels"])), [str(lv["level"]) for lv in e["levels"]])
        ax.set_xlim(-0.5, len(e["levels"]) - 0.5)
        ax.set_xlabel(f)
        ax.set_title(e["test"] or "", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    return save_pair(fig, stem)


def rest_of(cell: dict[str, Any], factors: Sequence[str]) -> str:
    """A cell's levels of ``factors`` as 'flows=1 pinning=pin-2cpu'."""
    return " ".join(f"{f}={cell['factors'].get(f)}" for f in factors)


def plot_side_by_side(
    result: dict[str, Any], metrics: Sequence[str], stem: Path
) -> tuple[Path, Path]:
    """The cells side by side: one panel per metric, a bar per level of the first factor
    and per combination of the others' levels (the median over the repetitions, the line
    their range), e.g. PDR, NDR and p99 latency by data plane, a bar per flow count. A
    bar that is a lower bound (the highest load tried met the goal) is hatched and marked
    '>='."""
    by = list(result["by"])
    first, rest = (by[0], by[1:]) if by else (None, [])
    cells = result["experiments"]
    # the levels in the campaign's order (the groups are sorted by it), else as stored
    ordered = [{"factors": g["levels"]} for g in result.get("groups", [])] or cells
    xs = list(dict.fromkeys(str(r["factors"].get(first)) for r in ordered)) if first else [""]
    series = list(dict.fromkeys(rest_of(r, rest) for r in ordered))
    panels = max(1, len(metrics))
    panel_w = max(3.2, 0.35 * len(xs) * max(1, len(series)) + 1.2)
    fig, axes = plt.subplots(1, panels, figsize=(panel_w * panels, 3.4), squeeze=False)
    width = 0.8 / max(1, len(series))

    at: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in cells:
        at.setdefault((str(r["factors"].get(first)), rest_of(r, rest)), []).append(r)
    for ax, m in zip(axes[0], metrics, strict=False):
        _, scale, ylabel = registry.metric(m)
        for j, s in enumerate(series):
            for i, x in enumerate(xs):
                members = at.get((x, s), [])
                ys = [r[m] / scale for r in members if r.get(m) is not None]
                pos = i + (j - (len(series) - 1) / 2) * width
                if not ys:
                    ax.text(pos, 0, "none", rotation=90, fontsize=6, ha="center", va="bottom")
                    continue
                # a lower bound (the highest load tried met the goal): hatched, '>='; a
                # latency at such a PDR is the latency at that bound: hatched, 'at >='
                low = any(r.get(bound_flag(m)) for r in members)
                top = float(np.median(ys))
                ax.bar(pos, top, width, color=f"C{j}", hatch="//" if low else None)
                if low:
                    mark = "at >=" if m == P99_AT_PDR else ">="
                    ax.text(pos, top, mark, ha="center", va="bottom", fontsize=7)
                if len(ys) > 1:
                    ax.plot([pos, pos], [min(ys), max(ys)], color="#1f2328", lw=1)
        ax.set_xticks(range(len(xs)), xs, fontsize=7, rotation=20 if len(xs) > 3 else 0)
        if m.endswith("_ns"):  # a latency: microseconds to tens of milliseconds side by side
            ax.set_yscale("log")
        ax.set_xlabel(first or "")
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
        if any(series):  # plain patches: a hatch marks a bound, not a series
            ax.legend(handles=[Patch(color=f"C{j}", label=s) for j, s in enumerate(series) if s],
                      fontsize=6)  # fmt: skip
    fig.tight_layout()
    return save_pair(fig, stem)


def bound_flag(metric: str) -> str:
    """The key that marks a cell's figure as a lower bound or taken at one: the
    figure's own (``compare.bound_key``), the PDR's for the latency at the PDR."""
    return "pdr_at_least" if metric == P99_AT_PDR else bound_key(metric)


def plot_accept_cpu(rows: Sequence[dict[str, Any]], stem: Path) -> tuple[Path, Path]:
    """Acceptance (or rtt) cells: each core's busy share (acceptance: the mean over the
    sustained runs) per cell."""
    cores = sorted({c for r in rows for c in r["cpu_busy"]}, key=lambda c: (len(c), c))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(rows) + 2), 3.0))
    width = 0.8 / max(1, len(cores))
    for i, core in enumerate(cores):
        x = np.arange(len(rows)) + (i - (len(cores) - 1) / 2) * width
        ax.bar(x, [r["cpu_busy"].get(core, 0.0) for r in rows], width, label=core)
    ax.set_xticks(
        range(len(rows)),
        [" ".join(f"{v}" for v in r["factors"].values()) + f" b{r['block']}" for r in rows],
        fontsize=7,
        rotation=30,
        ha="right",
    )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("busy share")
    ax.grid(axis="y", alpha=0.3)
    if cores:
        ax.legend(fontsize=6)
    return save_pair(fig, stem)


def plot_cpu_per_load(
    rows: Sequence[dict[str, Any]], cpu: Sequence[CpuPerLoad], stem: Path
) -> tuple[Path, Path]:
    """One panel per cell experiment: each core's busy share (and steal) per offered load
    (``cpu_per_load``)."""
    n = max(1, len(rows))
    cols = min(4, n)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(3.0 * cols, 2.4 * nrows), squeeze=False, sharey=True
    )
    for ax, r, per in zip(axes.ravel(), rows, cpu, strict=False):
        for i, (core, loads) in enumerate(sorted(per.items())):
            x = sorted(loads)
            busy = [np.mean([b for b, _ in loads[v]]) for v in x]
            steal = [np.mean([s for _, s in loads[v]]) for v in x]
            color = f"C{i}"
            ax.plot(np.array(x) / 1e3, busy, marker="o", ms=3, color=color, label=core)
            ax.plot(np.array(x) / 1e3, steal, ls="--", color=color, lw=1)
        ax.set_title(
            " ".join(f"{k}={v}" for k, v in r["factors"].items()) + f" b{r['block']}", fontsize=7
        )
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.set_xlabel("offered load (kpps)", fontsize=7)
    for ax in axes.ravel()[len(rows) :]:
        ax.axis("off")
    axes[0][0].set_ylabel("busy share")
    axes[0][0].legend(fontsize=6)
    return save_pair(fig, stem)


def plot_loss_per_cell(panels: list[tuple[Any, ...]], stem: Path) -> tuple[Path, Path]:
    """One panel per cell experiment, side by side on one scale: the packets lost at each
    location per offered load, stacked, in percent of the packets sent, over the trials
    the statistics keep (``loss_panels``, some lost: ``any_loss``; ``unsent`` hatched,
    never SUT loss)."""
    used = [loc for loc in LOCATIONS if any(s[loc].any() for _, _, s in panels)]
    cols = min(4, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(3.6 * cols, 3.2 * nrows), squeeze=False, sharey=True
    )
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    for ax, (r, rates, shares) in zip(axes.ravel(), panels, strict=False):
        x, bottom = np.arange(len(rates)), np.zeros(len(rates))
        for loc in used:
            ax.bar(x, shares[loc] * 100, bottom=bottom, color=COLORS[loc], label=LABELS[loc],
                   hatch="//" if loc == "unsent" else None, linewidth=0.5,
                   edgecolor="#666666" if loc == "unsent" else "white")  # fmt: skip
            bottom += shares[loc] * 100
        ax.set_xticks(x, [f"{v / 1e3:.4g}" for v in rates], fontsize=7, rotation=45)
        ax.set_title(
            " ".join(f"{k}={v}" for k, v in r["factors"].items()) + f" b{r['block']}", fontsize=8
        )
        ax.set_xlabel("offered load (kpps)", fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("packets lost (% of sent)")
    axes[0][0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: pct(v)))  # shared: all
    axes[0][0].legend(fontsize=6, loc="upper left", frameon=False)
    return save_pair(fig, stem)


def save_pair(fig: Any, stem: Path) -> tuple[Path, Path]:
    png, svg = save(fig, stem)
    return png, svg
