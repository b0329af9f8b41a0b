"""The report's trend pages: one per configuration the store holds three results or more
of (``report.series``), as CSIT's dashboard draws a trend: each point, jumpavg's groups
as steps (each group's average, its spread as a band), and a mark at each change (a
regression pointing down, a progression up, with its relative size). Points left out
of the detection (BAD, INCONCLUSIVE, no figure) are drawn hollow and named. The figure
is inlined (the page works offline), its SVG beside it. The figure is a job
(``shared/render.py``, drawn by ``report.trend_figure``): kept while its series'
points are the same."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from netassay.analysis.trend import MIN_POINTS
from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.report import series
from netassay.shared.plots import data_uri, slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.store.db import Store

PLOT = "netassay.report.trend_figure:plot_series"  # imported to draw (matplotlib)


def trend_sections(
    store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
) -> list[Section]:
    """A page per series of ``store`` with MIN_POINTS results or more, in
    ``out/trend{suffix}/``; the index's entry of each."""
    try:
        found = [s for s in series.series(store, cfg=cfg) if len(s.trend.points) >= MIN_POINTS]
    except UsageError:  # no experiment a method reads: no trend
        return []
    place = f"trend{suffix}"
    sections = []
    for s in found:
        slug = slugify(f"trend-{s.method}-{s.label}-{s.id}", used)
        job = FigureJob(PLOT, (s,), out / place / "figures" / slug, data_of(s))
        page = out / place / f"{slug}.html"
        sections.append(Section(
            title=f"trend: {s.method} {s.name} of '{s.label}'",
            text="\n".join(series.text(s)[1:2] + series.text(s)[-1:]),
            link=f"{place}/{page.name}", jobs=(job,), page=_writer(s, job, page),
        ))  # fmt: skip
    return sections


def _writer(s: series.Series, job: FigureJob, page: Path) -> Callable[[], None]:
    """Writes the page of ``s`` once its figure is drawn."""

    def write() -> None:
        png, svg = job.files()
        page.write_text(render_page(s, data_uri(png), f"figures/{svg.name}"))

    return write


@cache
def _environment() -> Environment:
    """The report's templates, compiled once per process."""
    return Environment(
        loader=PackageLoader("netassay.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )


def render_page(s: series.Series, png: str, svg: str) -> str:
    """The page of one series: its figure, groups, points and the text."""
    env = _environment()
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
        s=s, points=points, groups=groups, png=png, svg=svg, text="\n".join(series.text(s)),
        configuration=series.settings_text(s.configuration),
    )  # fmt: skip


def _point(s: series.Series, i: int, p: Any, group: int | None) -> dict[str, Any]:
    change = next((g.change for g in s.trend.changes if g.first == i), "")
    return {
        "n": i + 1, "x": series.when(p, s.by), "experiment": p.experiment_id, "label": p.label,
        "value": s.fmt(p.value), "verdict": p.verdict or "-", "mark": p.mark,
        "group": group or "-", "change": change,
    }  # fmt: skip
