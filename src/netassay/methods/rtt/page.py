"""The page of RTT configurations (seed 002's) in a report or of ``compare --html``: a
self-contained index.html with the comparison and the figures (``rtt/figures.py``:
CDFs and box plots of each segment by configuration, CPU use per core), drawn as jobs
(``shared/render.py``) and kept while the runs are the same."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from netassay.analysis.effects import over_runs
from netassay.methods.rtt.compare import Config, RttComparison
from netassay.shared.plots import data_uri
from netassay.shared.render import FigureJob, data_of, render

FIGURES = "netassay.methods.rtt.figures"  # imported to draw (matplotlib)


def figures(
    configs: Sequence[Config], segments: Sequence[str], stat: str, out: Path
) -> list[FigureJob]:
    """The figures of the page in ``out/figures``: a CDF per segment, the boxes, CPU."""
    figs = out / "figures"
    configs = list(configs)
    jobs = [
        FigureJob(f"{FIGURES}:cdf", (configs, seg), figs / f"cdf-{seg}", data_of(configs, seg))
        for seg in segments
    ]
    args = (configs, list(segments), stat)
    jobs.append(FigureJob(f"{FIGURES}:boxes", args, figs / "box", data_of(*args)))
    jobs.append(FigureJob(f"{FIGURES}:cpu", (configs,), figs / "cpu", data_of(configs)))
    return jobs


def writer(
    configs: Sequence[Config],
    segments: Sequence[str],
    stat: str,
    comparison: RttComparison,
    out: Path,
    jobs: Sequence[FigureJob],
) -> Callable[[], Path]:
    """Writes comparison.json and index.html (figures inline, works offline) into ``out``
    once ``jobs`` are drawn."""

    def write() -> Path:
        out.mkdir(parents=True, exist_ok=True)
        (out / "comparison.json").write_text(
            json.dumps(comparison.to_json(), indent=2, sort_keys=True)
        )
        pngs = [p for j in jobs for p in j.files() if p.suffix == ".png"]
        (out / "index.html").write_text(_html(configs, segments, stat, comparison, pngs))
        return out / "index.html"

    return write


def write_page(
    configs: Sequence[Config],
    segments: Sequence[str],
    stat: str,
    comparison: RttComparison,
    out: Path,
) -> Path:
    """Draw the figures (those not kept) and write index.html into ``out``; the page."""
    jobs = figures(configs, segments, stat, out)
    render(jobs)
    return writer(configs, segments, stat, comparison, out, jobs)()


def _html(
    configs: Sequence[Config],
    segments: Sequence[str],
    stat: str,
    comparison: RttComparison,
    pngs: list[Path],
) -> str:
    e = html.escape
    head = "".join(f"<th>{e(s)} {e(stat)} (us)</th>" for s in segments)
    rows = []
    for i, c in enumerate(configs):
        cells = []
        for seg in segments:
            s = over_runs(c.values(seg, stat))
            ci = s["ci95"]
            txt = "-" if s["median"] is None else f"{s['median'] / 1e3:.1f}"
            if ci:
                txt += f" [{ci[0] / 1e3:.1f}, {ci[1] / 1e3:.1f}]"
            cells.append(f"<td>{txt}</td>")
        rows.append(f"<tr><td>#{i + 1}</td><td>{e(c.label)}</td><td>{len(c.runs)}</td>"
                    f"<td>{c.excluded}</td>{''.join(cells)}</tr>")  # fmt: skip
    tests = []
    shown = [t.to_json() for t in comparison.pairwise] + [t.to_json() for t in comparison.trends]
    for t in shown:
        tests.append(
            "<tr>" + "".join(f"<td>{e(_cell(t.get(k)))}</td>" for k in _TEST_COLS) + "</tr>"
        )
    imgs = "".join(
        f'<figure><img alt="{e(p.stem)}" src="{data_uri(p)}">'
        f"<figcaption>{e(p.stem)}</figcaption></figure>"
        for p in pngs
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>netassay rtt</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:13px}}img{{max-width:100%}}</style>
</head><body><h1>netassay rtt: {len(configs)} configuration(s)</h1>
<p>Runs are the unit: each cell is the median over runs of the runs' {e(stat)}, with a bootstrap
95% confidence interval. Tests compare each configuration with #1.</p>
<table id="configs"><thead><tr><th>#</th><th>configuration</th><th>runs</th><th>excluded</th>
{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>
<h2>Comparisons</h2><table id="tests"><thead><tr>{"".join(f"<th>{c}</th>" for c in _TEST_COLS)}
</tr></thead><tbody>{"".join(tests)}</tbody></table>
<h2>Figures</h2>{imgs}</body></html>
"""


_TEST_COLS = ("segment", "test", "a", "b", "load", "n_a", "n_b", "n", "p", "cliffs_delta",
              "effect", "hodges_lehmann", "median_difference", "tau_b")  # fmt: skip


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
