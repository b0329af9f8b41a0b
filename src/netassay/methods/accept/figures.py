"""Figures and the page of acceptance tests (seed 004's): a verdict table; per test
(scenario) bars of throughput, loss and CPU busy per core with their spread over runs;
per-second series of throughput, loss and CPU per core. PNG and SVG; ``index.html``
holds the PNGs inline (it works offline) and links the SVGs."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import matplotlib

from netassay.methods.accept.store import load_accept_tests

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from netassay.analysis.acceptance import fmt_bps, fmt_pct, judge, to_layer_bps
from netassay.methods.accept.view import summary
from netassay.methods.plots import save, slugify
from netassay.trial.accept import AcceptTest

COLOURS = {"PASS": "#2a7", "FAIL": "#c33", "INCONCLUSIVE": "#d90"}


def _spread(values: list[float]) -> tuple[float, float, float]:
    """(mean, mean - min, max - mean): the bar and its whiskers over runs."""
    if not values:
        return (np.nan, 0.0, 0.0)
    m = float(np.mean(values))
    return (m, m - min(values), max(values) - m)


def bars(tests: list[AcceptTest], summaries: list[dict[str, Any]], stem: Path) -> list[Path]:
    """Per test: throughput (at its layer), loss and CPU busy per core, the bar the mean
    over runs and the whiskers the runs' range."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    x = np.arange(len(tests))
    labels = [s["label"] for s in summaries]
    thr = _sustained(summaries, "throughput_bps", 1e-9)
    loss = _sustained(summaries, "loss_ratio", 100)
    colours = [COLOURS.get(s["verdict"], "#888") for s in summaries]
    for ax, data, ylabel in ((axes[0], thr, "throughput (Gbit/s)"), (axes[1], loss, "loss (%)")):
        ax.bar(x, [d[0] for d in data], color=colours, yerr=_whiskers(data), capsize=4)
        ax.set_ylabel(ylabel)
        ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    for i, s in enumerate(summaries):
        if s["contract_bps"]:
            axes[0].hlines(
                0.95 * s["contract_bps"] / 1e9, i - 0.4, i + 0.4, colors="k",
                linestyles="dashed", label="95% of the contract" if i == 0 else None,
            )  # fmt: skip
    axes[1].axhline(0.1, color="k", linestyle="dashed", label="0.1%")
    axes[1].legend(fontsize=7)
    if any(s["contract_bps"] for s in summaries):
        axes[0].legend(fontsize=7)
    means = [d[0] for d in thr if d[0] > 0]
    if means and max(means) > 20 * min(means):  # tests of very different rates side by side
        axes[0].set_yscale("log")
    axes[0].set_title("throughput (mean, range over runs)")
    axes[1].set_title("loss (mean, range over runs)")
    _cpu_bars(axes[2], tests, x, labels)
    fig.tight_layout()
    return save(fig, stem)


def _sustained(summaries: list[dict[str, Any]], key: str, scale: float) -> list[tuple]:
    """Per test, the spread of one figure over its sustained runs, scaled."""
    return [
        _spread([
            r[key] * scale
            for r in s["per_run"]
            if r["phase"] == "sustained" and r[key] is not None
        ])
        for s in summaries
    ]  # fmt: skip


def _whiskers(data: list[tuple]) -> np.ndarray:
    return np.array([[d[1] for d in data], [d[2] for d in data]])


def _cpu_bars(ax: Any, tests: list[AcceptTest], x: np.ndarray, labels: list[str]) -> None:
    """CPU busy per core, one bar per core beside each other in each test's slot."""
    cores = sorted({c for t in tests for r in t.runs for c in r.cpu_busy()}, key=_core_key)
    width = 0.8 / max(1, len(cores))
    for j, core in enumerate(cores):
        data = [
            _spread([r.cpu_busy()[core] * 100 for r in t.runs if core in r.cpu_busy()])
            for t in tests
        ]
        ax.bar(
            x - 0.4 + width * (j + 0.5), [d[0] for d in data], width, label=core,
            yerr=_whiskers(data), capsize=2,
        )  # fmt: skip
    ax.set_ylabel("CPU busy (%)")
    ax.set_ylim(0, 105)
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_title("CPU busy per core (mean, range over runs)")
    ax.grid(True, axis="y", alpha=0.3)
    if cores:
        ax.legend(fontsize=7, ncol=2)


def _core_key(core: str) -> tuple[int, str]:
    digits = "".join(ch for ch in core if ch.isdigit())
    return (int(digits) if digits else -1, core)


def series(test: AcceptTest, s: dict[str, Any], stem: Path) -> list[Path]:
    """Per second: throughput at the layer and loss of each run, CPU busy per core (mean
    over runs), the thresholds dashed."""
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for run in test.runs:
        if run.intervals_side != "receiver" or not run.intervals:
            continue
        mid = [(iv.start_s + iv.end_s) / 2 for iv in run.intervals]
        rate = []
        for iv in run.intervals:
            bps = iv.payload_bps
            rate.append(
                np.nan
                if bps is None or (test.layer != "payload" and not run.datagram_bytes)
                else to_layer_bps(bps, run.datagram_bytes, run.ip_version, test.layer) / 1e9
            )
        loss = [np.nan if iv.loss_ratio is None else iv.loss_ratio * 100 for iv in run.intervals]
        axes[0].plot(mid, rate, marker=".", label=f"run {run.index}")
        axes[1].plot(mid, loss, marker=".", label=f"run {run.index}")
    if test.contract_bps:
        axes[0].axhline(
            0.95 * test.contract_bps / 1e9,
            color="k",
            linestyle="dashed",
            label="95% of the contract",
        )
    axes[1].axhline(0.1, color="k", linestyle="dashed", label="0.1%")
    cores: dict[str, dict[float, list[float]]] = {}
    for run in test.runs:
        for sample in run.cpu:
            for core, shares in sample.cores.items():
                if "busy" in shares:
                    cores.setdefault(core, {}).setdefault(sample.t_s, []).append(shares["busy"])
    for core in sorted(cores, key=_core_key):
        ts = sorted(cores[core])
        axes[2].plot(ts, [100 * float(np.mean(cores[core][t])) for t in ts], label=core)
    axes[0].set_ylabel(f"throughput at {test.layer} (Gbit/s)")
    axes[1].set_ylabel("loss (%)")
    axes[2].set_ylabel("CPU busy (%)")
    axes[2].set_ylim(0, 105)
    axes[2].set_xlabel("time in the run (s)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, ncol=4)
    axes[0].set_title(f"{s['label']}: {s['verdict']} (per second)")
    fig.tight_layout()
    return save(fig, stem)


def _per_second(test: AcceptTest) -> bool:
    """Whether a test has anything to draw per second: a receiver's intervals or CPU."""
    return any((r.intervals_side == "receiver" and r.intervals) or r.cpu for r in test.runs)


def render(tests: list[AcceptTest], out: Path) -> Path:
    """Write the figures, summary.json and index.html into ``out``; return the page."""
    figs = out / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    verdicts = [judge(t) for t in tests]
    summaries = [summary(t, v) for t, v in zip(tests, verdicts, strict=True)]
    made: list[tuple[str, list[Path]]] = []
    if tests:
        made.append(("throughput, loss and CPU per test", bars(tests, summaries, figs / "bars")))
    used: set[str] = set()
    for t, s in zip(tests, summaries, strict=True):
        if not _per_second(t):  # a client-only import: no receiver's seconds, no CPU
            continue
        slug = slugify(s["label"], used)
        made.append((f"{s['label']}: per second", series(t, s, figs / f"series-{slug}")))
    (out / "summary.json").write_text(json.dumps(summaries, indent=2, default=str))
    (out / "index.html").write_text(_html(summaries, made, out))
    return out / "index.html"


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


def render_store(store: Any, out: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The page of every acceptance test of a store; (page, the assess objects)."""
    tests = list(load_accept_tests(store))
    page = render(tests, out)
    return page, [summary(t) for t in tests]
