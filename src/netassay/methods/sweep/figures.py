"""The PASTRAMI figure: PLR (log) with its CI band and normalized CI width; DR (linear)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.lines as mlines
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from netassay.analysis.assess import Assessment
from netassay.shared.plots import rate_unit

PNG_DPI = 110
VERDICT_COLOR = {"GOOD": "#1a7f37", "BAD": "#cf222e", "INCONCLUSIVE": "#9a6700"}


def plot_assessment(
    a: Assessment, stem: Path, formats: tuple[str, ...] = ("png", "svg")
) -> list[Path]:
    """Draw one experiment's figure; write stem.png, stem.svg...; return the paths."""
    div, unit = rate_unit(a.table.rate_pps)
    x = a.table.rate_pps / div
    fig, (ax, axd) = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)
    _loss_panel(ax, a, x, unit)
    _delivery_panel(axd, a, x, unit)
    color = VERDICT_COLOR.get(a.verdict, "black")
    fig.suptitle(a.label, fontsize=10)
    fig.text(  # in the figure's corner, never over a data point
        0.995, 0.995, a.verdict, ha="right", va="top", fontsize=13, fontweight="bold",
        color=color, bbox={"boxstyle": "round", "fc": "white", "ec": color},
    )  # fmt: skip
    _lay_out_once(fig, PNG_DPI)
    out = []
    for fmt in formats:
        path = stem.parent / f"{stem.name}.{fmt}"
        fig.savefig(path, dpi=PNG_DPI if fmt == "png" else None)
        out.append(path)
    plt.close(fig)
    return out


def _lay_out_once(fig: Figure, dpi: float) -> None:
    """Run the constrained layout once, as the PNG's savefig would, then keep it: each
    savefig would otherwise lay the figure out again (half of a figure's cost). The PNG
    comes out identical to the pixel; the SVG's positions are the PNG's."""
    engine = fig.get_layout_engine()
    if engine is None:
        return
    before = fig.get_dpi()
    fig.set_dpi(dpi)
    engine.execute(fig)
    fig.set_layout_engine("none")
    fig.set_dpi(before)


def _loss_panel(ax: Axes, a: Assessment, x: np.ndarray, unit: str) -> None:
    """Left: the load-loss curve on a log axis, its UCL95 band and ΔUCL95 on the right."""
    t, s, pdr = a.table, a.saturation, a.params["pdr"]
    floor = 1e-6
    plr = np.maximum(t.plr, floor)
    ucl = np.where(np.isfinite(t.ucl95), np.maximum(t.ucl95, floor), plr)
    measured = t.k > 0  # a load without a usable trial is a gap in every curve
    ax.fill_between(x, plr, ucl, where=measured, color="#0969da", alpha=0.25, label="mean to UCL95")
    ax.plot(x, plr, "o-", color="#0969da", lw=1.6, ms=4, label="PLR (mean)")
    ax.set_yscale("log")
    ax.set_ylim(floor * 0.8, 1.2)
    ax.axhline(pdr, color="#cf222e", ls="--", lw=1, label=f"PDR goal {pdr * 100:g}%")
    ax.set_xlabel(f"offered load [{unit}]")
    ax.set_ylabel(f"packet loss ratio (floor {floor:g})")
    ax.grid(True, which="major", alpha=0.3)
    ax2 = ax.twinx()
    d = np.where(np.isfinite(t.delta_ucl95), t.delta_ucl95, np.nan)
    ax2.plot(x, d, "s:", color="#8250df", ms=3.5, lw=1, label="ΔUCL95 (right axis)")
    ax2.set_ylabel("normalized CI width ΔUCL95", color="#8250df")
    ax2.tick_params(axis="y", colors="#8250df")
    top = np.nanmax(d) if np.any(np.isfinite(d)) else 1.0
    ax2.set_ylim(0, max(1.0, float(top) * 1.15))
    _marks(ax, x, s.potential_saturation_index, s.saturation_index)
    _gaps(ax, x, ~measured, label=True)
    _minor_ticks_as_one_line(ax)
    handles = ax.get_legend_handles_labels()
    h2 = ax2.get_legend_handles_labels()
    ax.legend(handles[0] + h2[0], handles[1] + h2[1], loc="best", fontsize=8)
    ax.set_title("load-loss curve", fontsize=10)


def _minor_ticks_as_one_line(ax: Axes) -> None:
    """The log axis's minor tick marks (some 50, unlabelled) drawn as one line of tick
    markers: as tick objects they cost a quarter of the figure (each is placed again at
    every layout pass and draw). Same marks, same pixels (``tests/unit/
    test_figure_speed.py``); call it once the axis's limits are final."""
    axis = ax.yaxis
    lo, hi = sorted(ax.get_ylim())
    locs = [v for v in axis.get_minorticklocs() if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
    tick = axis.get_minor_ticks(1)[0].tick1line
    marks = mlines.Line2D(
        np.zeros(len(locs)), locs, linestyle="none", marker=tick.get_marker(),
        markersize=tick.get_markersize(), markeredgewidth=tick.get_markeredgewidth(),
        color=tick.get_color(), markeredgecolor=tick.get_markeredgecolor(),
        transform=ax.get_yaxis_transform("tick1"), clip_on=False, zorder=axis.get_zorder(),
    )  # fmt: skip
    marks.set_in_layout(False)
    ax.add_artist(marks)
    axis.set_minor_locator(mticker.NullLocator())


def _delivery_panel(axd: Axes, a: Assessment, x: np.ndarray, unit: str) -> None:
    """Right: the delivery ratio 1 - PLR against the PDR goal."""
    t, s, pdr = a.table, a.saturation, a.params["pdr"]
    measured = t.k > 0
    dr = 1.0 - t.plr
    axd.plot(x, dr, "o-", color="#1a7f37", lw=1.6, ms=4, label="DR = 1 - PLR")
    axd.axhline(1 - pdr, color="#cf222e", ls="--", lw=1, label=f"{(1 - pdr) * 100:g}%")
    axd.set_xlabel(f"offered load [{unit}]")
    axd.set_ylabel("delivery ratio")
    low = float(np.nanmin(dr)) if np.any(measured) else 0.0
    axd.set_ylim(min(0.0, low), 1.02)
    axd.grid(True, alpha=0.3)
    _marks(axd, x, s.potential_saturation_index, s.saturation_index)
    _gaps(axd, x, ~measured, label=False)
    axd.legend(loc="lower left", fontsize=8)
    axd.set_title("load-delivery curve", fontsize=10)


def _marks(ax: Axes, x: np.ndarray, potential: int | None, saturation: int | None) -> None:
    if potential is not None and np.isfinite(x[potential]):
        ax.axvline(x[potential], color="#9a6700", ls="-.", lw=1, label="potential saturation")
    if saturation is not None and np.isfinite(x[saturation]):
        ax.axvline(x[saturation], color="#cf222e", ls="-", lw=1.2, alpha=0.7, label="saturation")


def _gaps(ax: Axes, x: np.ndarray, gap: np.ndarray, *, label: bool) -> None:
    """A grey dotted line at each load without a usable trial (the curves break there)."""
    for n, xi in enumerate(x[gap & np.isfinite(x)]):
        ax.axvline(
            xi,
            color="#8c959f",
            ls=":",
            lw=1.2,
            label="not measured (see the table)" if label and n == 0 else None,
        )
