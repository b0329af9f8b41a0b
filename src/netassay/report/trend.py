"""The report's trend pages: one per configuration the store holds three results or more
of (``report.series``), as CSIT's dashboard draws a trend: each point, jumpavg's groups
as steps (each group's average, its spread as a band), and a mark at each change (a
regression pointing down, a progression up, with its relative size). Points left out
of the detection (BAD, INCONCLUSIVE, no figure) are drawn hollow and named. The figure
is inlined (the page works offline), its SVG beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from jinja2 import Environment, PackageLoader, select_autoescape

from netassay.analysis.trend import MIN_POINTS, THRESHOLD
from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.methods.base import Section
from netassay.methods.plots import data_uri, save, slugify
from netassay.report import series as S
from netassay.store.db import Store

COLORS = {"regression": "#cf222e", "progression": "#1a7f37"}


def plot_series(s: S.Series, stem: Path) -> tuple[Path, Path]:
    """The series drawn: points, groups as steps with their spread, changes marked."""
    t = s.trend
    fig, ax = plt.subplots(figsize=(max(5.0, 0.35 * len(t.points) + 2.5), 3.4))
    used = [(i, p.value / s.scale) for i, p in enumerate(t.points) if p.used]
    left = [(i, p) for i, p in enumerate(t.points) if not p.used and p.value is not None]
    if used:
        ax.plot(*zip(*used, strict=True), "o", ms=5, color="#0969da", label="judged")
    for i, p in left:
        ax.plot(i, p.value / s.scale, "o", ms=6, mfc="none", mec="#9a6700")  # type: ignore[operator]
        ax.annotate(p.mark, (i, p.value / s.scale), fontsize=6, color="#9a6700",  # type: ignore[operator]
                    xytext=(0, 6), textcoords="offset points", ha="center")  # fmt: skip
    for g in t.groups:
        lo, hi = g.first - 0.4, g.last + 0.4
        avg, sd = g.average / s.scale, g.stdev / s.scale
        ax.plot([lo, hi], [avg, avg], color="#57606a", lw=2)
        ax.fill_between([lo, hi], avg - sd, avg + sd, color="#57606a", alpha=0.15, lw=0)
        if g.change in COLORS:
            ax.plot(g.first, avg, "v" if g.change == "regression" else "^", ms=11,
                    color=COLORS[g.change], label=g.change)  # fmt: skip
            ax.annotate(g.size(), (g.first, avg), fontsize=8, color=COLORS[g.change],
                        xytext=(6, -12), textcoords="offset points")  # fmt: skip
    ticks = [S.when(p, s.by)[5:19] if s.by == S.TIME else p.x for p in t.points]
    ax.set_xticks(range(len(t.points)), ticks, rotation=40, ha="right", fontsize=7)
    ax.set_xlim(-0.8, len(t.points) - 0.2)
    ax.set_ylabel(s.axis)
    ax.set_xlabel("stored (UTC)" if s.by == S.TIME else s.by)
    ax.set_title(f"{s.method} {s.name}: {t.note or _state(s)}", fontsize=9)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=7)
    png, svg = save(fig, stem)
    return png, svg


def _state(s: S.Series) -> str:
    return "newest group: " + S.newest_text(s.trend, THRESHOLD).split(" (")[0]


def trend_sections(
    store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
) -> list[Section]:
    """A page per series of ``store`` with MIN_POINTS results or more, in
    ``out/trend{suffix}/``; the index's entry of each."""
    try:
        found = [s for s in S.series(store, cfg=cfg) if len(s.trend.points) >= MIN_POINTS]
    except UsageError:  # no experiment a method reads: no trend
        return []
    place = f"trend{suffix}"
    sections = []
    for s in found:
        slug = slugify(f"trend-{s.method}-{s.label}-{s.id}", used)
        png, svg = plot_series(s, out / place / "figures" / slug)
        page = out / place / f"{slug}.html"
        page.write_text(render_page(s, data_uri(png), f"figures/{svg.name}"))
        sections.append(Section(
            title=f"trend: {s.method} {s.name} of '{s.label}'",
            text="\n".join(S.text(s)[1:2] + S.text(s)[-1:]),
            link=f"{place}/{page.name}",
        ))  # fmt: skip
    return sections


def render_page(s: S.Series, png: str, svg: str) -> str:
    """The page of one series: its figure, groups, points and the text."""
    env = Environment(
        loader=PackageLoader("netassay.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    t = s.trend
    group_of = {i: n for n, g in enumerate(t.groups, 1) for i in range(g.first, g.last + 1)}
    points = [_point(s, i, p, group_of.get(i)) for i, p in enumerate(t.points)]
    groups = [
        {"n": n, "first": g.first + 1, "last": g.last + 1, "points": g.points,
         "average": s.fmt(g.average), "spread": s.fmt(g.stdev), "change": g.change,
         "relative": g.size()}
        for n, g in enumerate(t.groups, 1)
    ]  # fmt: skip
    return env.get_template("trend.html.j2").render(
        s=s, points=points, groups=groups, png=png, svg=svg, text="\n".join(S.text(s)),
        configuration=S.settings_text(s.configuration),
    )  # fmt: skip


def _point(s: S.Series, i: int, p: Any, group: int | None) -> dict[str, Any]:
    change = next((g.change for g in s.trend.changes if g.first == i), "")
    return {
        "n": i + 1, "x": S.when(p, s.by), "experiment": p.experiment_id, "label": p.label,
        "value": s.fmt(p.value), "verdict": p.verdict or "-", "mark": p.mark,
        "group": group or "-", "change": change,
    }  # fmt: skip
