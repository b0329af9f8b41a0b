"""A search's figure: which load was tried when, with what result, and the bounds found.

Each trial is a point at the time it ended (seconds since the search started, as the
search recorded it) and the load it offered; its marker says how it counted: good for
every goal, good for some goals only (between NDR and PDR, say), bad for every goal, or
unusable (a measurement fault, never SUT loss). Its size grows with the trial's
duration. Each goal's relevant lower and upper bound are drawn as a band on the right,
with the conditional throughput as a line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

from netassay.shared import search_engine as engine
from netassay.shared.plots import rate_unit

FORMATS = ("png", "svg")
# how a trial counted, over all goals: (label, marker, colour)
KINDS = {
    "good": ("good for every goal", "o", "#1a7f37"),
    "some": ("good for some goals", "D", "#bf8700"),
    "bad": ("bad for every goal", "v", "#cf222e"),
    "unusable": ("unusable (measurement fault)", "x", "#57606a"),
}
GOAL_COLOURS = ("#0969da", "#8250df", "#bc4c00", "#1b7c83")


def trial_kind(goals: dict[str, dict[str, str]]) -> str:
    """How one stored trial counted, from its per-goal classification."""
    marks = [g.get("trial") for g in goals.values()]
    if not marks or any(m == engine.UNUSABLE for m in marks):
        return "unusable"
    if all(m == "good" for m in marks):
        return "good"
    return "bad" if all(m == "bad" for m in marks) else "some"


def points(trials: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored trials (``Store.trials`` rows) as the figure's points, in search order."""
    out = []
    for t in trials:
        info = (t.get("counters") or {}).get("search")
        if not info:
            continue
        out.append(
            {
                "trial": int(info["trial"]),
                "t_s": float(info.get("elapsed_s", 0.0)),
                "load_pps": engine.intended_load(t),
                "duration_s": float(info.get("intended_duration_s", t["duration_s"])),
                "kind": trial_kind(info.get("goals") or {}),
            }
        )
    return sorted(out, key=lambda p: p["trial"])


def _timeline(pts: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Each point's time: when it ended, from the search's start; a search whose trials
    record no wall time (replayed into a simulation) is laid out by its traffic time."""
    traffic = np.cumsum([p["duration_s"] for p in pts]) if pts else np.array([])
    if pts and max(p["t_s"] for p in pts) >= 0.5 * float(traffic[-1]):
        return list(pts), "time since the search started [s] (end of each trial)"
    timed = [{**p, "t_s": float(t)} for p, t in zip(pts, traffic, strict=True)]
    return timed, "traffic time so far [s] (end of each trial)"


def plot_search(
    pts: Sequence[dict[str, Any]], outcome: engine.SearchOutcome, stem: Path, title: str = ""
) -> list[Path]:
    """Draw the load-time figure of one search (every trial on the left, the bounds'
    neighbourhood on the right); write stem.png and stem.svg."""
    pts, xlabel = _timeline(pts)
    loads = np.array([p["load_pps"] for p in pts] or [1.0])
    bounds = [v for o in outcome.goals for v in (o.lower_pps, o.upper_pps) if v is not None]
    div, unit = rate_unit(np.concatenate([loads, np.array(bounds or [1.0])]))
    fig, (ax, zoom) = plt.subplots(
        1, 2, figsize=(11, 4.4), constrained_layout=True, width_ratios=(3, 2)
    )
    for a in (ax, zoom):
        _draw(a, pts, outcome, div)
        a.set_xlabel(xlabel)
        a.grid(True, alpha=0.3)
        a.yaxis.set_major_formatter(ScalarFormatter())
    ax.set_ylabel(f"offered load [{unit}]")
    if loads.min() > 0 and loads.max() / loads.min() > 5:  # the search narrows in: log axis
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
    if bounds:  # the right panel: 3% around the bounds of every goal
        lo, hi = min(bounds) * 0.97 / div, max(bounds) * 1.03 / div
        zoom.set_ylim(lo, hi)
        zoom.set_title("around the bounds", fontsize=9)
    stop = "" if outcome.stop is None else f" (incomplete: {outcome.stop.kind})"
    ax.set_title(
        (title + ": " if title else "")
        + f"{outcome.trials} trials, {outcome.trial_time_s:.1f} s of traffic in "
        f"{outcome.wall_time_s:.1f} s{stop}",
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="best")
    out = []
    for fmt in FORMATS:
        path = stem.with_name(f"{stem.name}.{fmt}")  # a label's dots kept in the name
        fig.savefig(path, dpi=110)
        out.append(path)
    plt.close(fig)
    return out


def _draw(
    ax: Any, pts: Sequence[dict[str, Any]], outcome: engine.SearchOutcome, div: float
) -> None:
    """The trials as marked points joined in order, and each goal's bounds."""
    if pts:
        ax.plot(
            [p["t_s"] for p in pts], [p["load_pps"] / div for p in pts], "-", color="#d0d7de", lw=1
        )
    longest = max((p["duration_s"] for p in pts), default=1.0) or 1.0
    for kind, (label, marker, colour) in KINDS.items():
        mine = [p for p in pts if p["kind"] == kind]
        if mine:
            ax.scatter(
                [p["t_s"] for p in mine],
                [p["load_pps"] / div for p in mine],
                s=[18 + 60 * p["duration_s"] / longest for p in mine],
                marker=marker,
                color=colour,
                label=label,
                zorder=3,
            )
    for n, o in enumerate(outcome.goals):
        colour = GOAL_COLOURS[n % len(GOAL_COLOURS)]
        lo, hi = o.lower_pps, o.upper_pps
        if lo is not None and hi is not None:
            ax.axhspan(lo / div, hi / div, color=colour, alpha=0.15, lw=0)
        for v in (lo, hi):
            if v is not None:
                ax.axhline(v / div, color=colour, lw=0.8, ls=":")
        if o.conditional_pps is not None:
            ax.axhline(
                o.conditional_pps / div,
                color=colour,
                lw=1.2,
                ls="--",
                label=f"{o.goal.label}: bounds and conditional throughput",
            )


def plot_stored(
    trials: Iterable[dict[str, Any]], outcome: engine.SearchOutcome, stem: Path, title: str = ""
) -> list[Path]:
    """``plot_search`` of a search's stored trials (``points``)."""
    return plot_search(points(trials), outcome, stem, title)
