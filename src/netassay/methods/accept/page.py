"""The page of acceptance tests (seed 004's) in a report: a verdict table and the
figures (``accept/figures.py``: per test bars, per-second series), drawn as jobs
(``shared/render.py``) and kept while a test's data is the same. ``index.html`` holds
the PNGs inline (it works offline) and links the SVGs."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netassay.analysis.acceptance import fmt_bps, fmt_pct, judge
from netassay.methods.accept.store import load_accept_tests
from netassay.methods.accept.view import summary
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, data_of
from netassay.trial.accept import AcceptTest

FIGURES = "netassay.methods.accept.figures"  # imported to draw (matplotlib)


def _per_second(test: AcceptTest) -> bool:
    """Whether a test has anything to draw per second: a receiver's intervals or CPU."""
    return any((r.intervals_side == "receiver" and r.intervals) or r.cpu for r in test.runs)


def figures(
    tests: list[AcceptTest], out: Path
) -> tuple[list[dict[str, Any]], list[tuple[str, FigureJob]]]:
    """The tests' summaries, and their figures as (caption, job) in ``out/figures``."""
    figs = out / "figures"
    verdicts = [judge(t) for t in tests]
    summaries = [summary(t, v) for t, v in zip(tests, verdicts, strict=True)]
    made: list[tuple[str, FigureJob]] = []
    if tests:
        args = (tests, summaries)
        job = FigureJob(f"{FIGURES}:bars", args, figs / "bars", data_of(*args))
        made.append(("throughput, loss and CPU per test", job))
    used: set[str] = set()
    for t, s in zip(tests, summaries, strict=True):
        if not _per_second(t):  # a client-only import: no receiver's seconds, no CPU
            continue
        slug = slugify(s["label"], used)
        job = FigureJob(f"{FIGURES}:series", (t, s), figs / f"series-{slug}", data_of(t, s))
        made.append((f"{s['label']}: per second", job))
    return summaries, made


def writer(
    summaries: list[dict[str, Any]], made: list[tuple[str, FigureJob]], out: Path
) -> Callable[[], Path]:
    """Writes summary.json and index.html into ``out`` once the figures are drawn."""

    def write() -> Path:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
        drawn = [(caption, job.files()) for caption, job in made]
        (out / "index.html").write_text(_html(summaries, drawn, out))
        return out / "index.html"

    return write


def _html(summaries: list[dict[str, Any]], made: list[tuple[str, list[Path]]], out: Path) -> str:
    e = html.escape
    rows = []
    for s in summaries:
        contract = "none given" if s["contract_bps"] is None else fmt_bps(s["contract_bps"])
        ci = s["throughput_ci95_bps"]
        thr = fmt_bps(s["throughput_bps"]) + (
            f" [{fmt_bps(ci[0])}, {fmt_bps(ci[1])}]" if ci else ""
        )
        rows.append(
            f'<tr class="{e(s["verdict"].lower())}"><td>{e(s["label"])}</td>'
            f"<td>{e(s['source'])}</td><td>{e(contract)}</td><td>{e(s['layer'])}</td>"
            f"<td>{s['runs']}</td><td>{e(thr)}</td><td>{e(fmt_pct(s['loss_ratio']))}</td>"
            f"<td>{len(s['failed_seconds'])} of {s['graded_seconds']}</td>"
            f"<td><b>{e(s['verdict'])}</b></td><td>{e(s['reason'])}</td></tr>"
        )
    imgs = []
    for caption, paths in made:
        png = next(p for p in paths if p.suffix == ".png")
        svg = next(p for p in paths if p.suffix == ".svg")
        data = base64.b64encode(png.read_bytes()).decode()
        imgs.append(
            f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
            f'<figcaption>{e(caption)} (<a href="{e(svg.relative_to(out).as_posix())}">SVG</a>)'
            "</figcaption></figure>"
        )
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>netassay acceptance tests</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:13px}}img{{max-width:100%}}
tr.pass td:nth-child(9){{color:#2a7}}tr.fail td:nth-child(9){{color:#c33}}
tr.inconclusive td:nth-child(9){{color:#d90}}</style>
</head><body><h1>netassay acceptance tests: {len(summaries)}</h1>
<p>A test PASSes when its loss is below 0.1% and its mean receiver rate, counted at the
stated layer, is at least 95% of the contract, in every run. A miss located in the test
host (its drop counters, a saturated core, a sender that could not offer the rate) is
INCONCLUSIVE: host-limited, not a FAIL of the link. Seconds are graded by the same rules.</p>
<table id="verdicts"><thead><tr><th>test</th><th>source</th><th>contract</th><th>layer</th>
<th>runs</th><th>throughput [95% CI]</th><th>loss</th><th>seconds failed</th><th>verdict</th>
<th>reason</th></tr></thead><tbody>{"".join(rows)}</tbody></table>
<h2>Figures</h2>{"".join(imgs)}</body></html>
"""


def of_store(
    store: Any, out: Path
) -> tuple[list[dict[str, Any]], list[FigureJob], Callable[[], Path]]:
    """The page of every acceptance test of a store in ``out``: (the assess objects, the
    figures to draw, what writes the page once they are)."""
    tests = list(load_accept_tests(store))
    summaries, made = figures(tests, out)
    return [summary(t) for t in tests], [job for _, job in made], writer(summaries, made, out)
