"""Figures and the page of acceptance tests (seed 004's): a verdict table; per test
(scenario) bars of throughput, loss and CPU busy per core with their spread over runs;
per-second series of throughput, loss and CPU per core. PNG and SVG (the page that
holds them is ``accept/page.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from netassay.analysis.acceptance import to_layer_bps
from netassay.shared.plots import save
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


def _sustained(
    summaries: list[dict[str, Any]], key: str, scale: float
) -> list[tuple[float, float, float]]:
    """Per test, the spread of one figure over its sustained runs, scaled."""
    return [
        _spread([
            r[key] * scale
            for r in s["per_run"]
            if r["phase"] == "sustained" and r[key] is not None
        ])
        for s in summaries
    ]  # fmt: skip


def _whiskers(data: list[tuple[float, float, float]]) -> np.ndarray:
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
