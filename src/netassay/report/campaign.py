"""A campaign's page of the report: the matrix (one row per cell experiment: factors,
verdict, PDR, NDR, CPU, a link to its PASTRAMI figure), PDR per factor level with its
spread, the comparison (groups and each factor's test and effect sizes), CPU use per
core per load, and a sweep's loss by location per load for each cell side by side (where
the loss moves from one level of a factor to another: seed 003's Fig. 5). Figures inline
(the page works offline), SVGs beside them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape
from matplotlib.ticker import FuncFormatter

from netassay import methods as registry
from netassay.campaign import results as CR
from netassay.methods.base import Column
from netassay.methods.plots import data_uri, save
from netassay.methods.sweep.loss_figure import COLORS, LABELS, LOCATIONS, loss_shares, pct
from netassay.store.db import Store
from netassay.units import fmt_rate


def plot_pdr_by_factor(
    result: dict[str, Any], stem: Path, metric: str = "pdr_pps"
) -> tuple[Path, Path]:
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
    store: Store, rows: Sequence[dict[str, Any]], stem: Path
) -> tuple[Path, Path]:
    """One panel per cell experiment: each core's busy share (and steal) per offered load."""
    n = max(1, len(rows))
    cols = min(4, n)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(3.0 * cols, 2.4 * nrows), squeeze=False, sharey=True
    )
    for ax, r in zip(axes.ravel(), rows, strict=False):
        per: dict[str, dict[float, list[tuple[float, float]]]] = {}
        for t in store.trials(r["experiment_id"]):
            for core, c in (t.get("cpu") or {}).items():
                per.setdefault(core, {}).setdefault(t["rate_pps"], []).append(
                    (c.get("busy", 0.0), c.get("steal", 0.0))
                )
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


def loss_panels(store: Store, rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Per cell experiment: (its row, its loads, the mean share of the sent packets lost
    at each location per load, over the trials at that load the statistics keep:
    ``loss_shares``)."""
    panels = []
    for r in rows:
        trials = [t for t in store.trials(r["experiment_id"]) if t.get("rate_pps")]
        rates = sorted({float(t["rate_pps"]) for t in trials})
        at = {v: i for i, v in enumerate(rates)}
        located = [{**t, "load_index": at[float(t["rate_pps"])]} for t in trials]
        panels.append((r, *loss_shares(located, rates)))
    return panels


def plot_loss_per_cell(
    store: Store, rows: Sequence[dict[str, Any]], stem: Path
) -> tuple[Path, Path] | None:
    """One panel per cell experiment, side by side on one scale: the packets lost at each
    location per offered load, stacked (``loss_panels``; ``unsent`` hatched, never SUT
    loss). None when no cell lost a packet anywhere."""
    panels = loss_panels(store, rows)
    if not any(s[loc].any() for _, _, s in panels for loc in LOCATIONS):
        return None
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


def _pps(v: float | None) -> str:
    return fmt_rate(v) if v is not None else "-"


def _num(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.3g}"


def _cpu(c: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.0%}" for k, v in c.items()) or "-"


def _tests(result: dict[str, Any]) -> list[list[str]]:
    out = []
    for e in result["effects"]:
        if "trend" in e:
            t = e["trend"]
            out.append(
                [
                    e["factor"],
                    "trend over all levels",
                    "Kendall tau-b",
                    _num(t["tau_b"]),
                    _num(t["p"]),
                    str(t["n"]),
                    "-",
                    "-",
                    "-",
                ]
            )
        metric = e.get("metric", "pdr_pps")
        for c in e["comparisons"]:
            n = f"{c['n_pairs']} pairs" if c["paired"] else f"{c['n_a']} + {c['n_b']}"
            shift = CR.shift_text(metric, c)
            out.append(
                [
                    e["factor"]
                    + ("" if metric == "pdr_pps" else f" ({registry.metric(metric)[0]})"),
                    f"{c['level']} vs {c['against']}",
                    c["test"],
                    _num(c["statistic"]),
                    _num(c["p"]),
                    n,
                    _num(c["cliffs_delta"]),
                    c["effect"],
                    shift,
                ]
            )
    return out


def render_page(
    store: Store, name: str, out_dir: Path, figures: dict[tuple[int, str], str], index: str
) -> dict[str, Any]:
    """Write ``out_dir/index.html`` for campaign ``name``; return what the index shows."""
    result = CR.comparison(store, [], name)
    spec = (store.campaign(name) or {}).get("spec", {})
    comp = registry.method(result["method"]).comparison
    own = bool(comp.columns)  # a method with a page of its own (acceptance, rtt)
    loss = None
    if own:
        (pdr_png, pdr_svg), (cpu_png, cpu_svg), rows, groups = _own_tables(
            result, comp, out_dir / "figures"
        )
    else:
        (pdr_png, pdr_svg), (cpu_png, cpu_svg), rows, groups = _sweep_tables(
            store, result, out_dir / "figures", figures
        )
        loss = plot_loss_per_cell(store, result["experiments"], out_dir / "figures" / "loss")
    env = Environment(
        loader=PackageLoader("netassay.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    page = env.get_template("campaign.html.j2").render(
        name=name,
        figure_name=registry.metric(comp.figures[0])[0] if own else "PDR",
        cols=[h for h, _ in comp.columns] if own else None,
        gcols=[h for h, _ in comp.group_columns] if own else None,
        method=spec.get("method", "sweep"),
        cells=len(spec.get("cells", [])),
        repetitions=spec.get("repetitions", 1),
        seed=(store.campaign(name) or {}).get("seed", "-"),
        rows=rows,
        factors=result["factors"],
        by=result["by"],
        groups=groups,
        tests=_tests(result),
        text="\n".join(CR.text(result)),
        pdr_png=data_uri(pdr_png),
        pdr_svg=f"figures/{pdr_svg.name}",
        cpu_png=data_uri(cpu_png),
        cpu_svg=f"figures/{cpu_svg.name}",
        loss_png=data_uri(loss[0]) if loss else None,
        loss_svg=f"figures/{loss[1].name}" if loss else None,
        index=index,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "index.html").write_text(page)
    return {
        "title": f"campaign: {name}",
        "text": _index_text(rows, groups, spec, result),
        "link": f"{out_dir.name}/index.html",
    }


def _own_tables(result: dict[str, Any], comp: Any, figs: Path) -> tuple:
    """Figures and table rows of a method that names its own columns (acceptance, rtt)."""
    metric = comp.figures[0]
    by_factor = plot_pdr_by_factor(result, figs / f"{metric}_by_factor", metric)
    cpu = plot_accept_cpu(result["experiments"], figs / "cpu_per_cell")
    rows = [_cells(r, list(comp.columns)) for r in result["experiments"]]
    groups = [
        {**_cells(g, list(comp.group_columns)), "n": g["experiments"]} for g in result["groups"]
    ]
    return by_factor, cpu, rows, groups


def _sweep_tables(
    store: Store, result: dict[str, Any], figs: Path, figures: dict[tuple[int, str], str]
) -> tuple:
    """Figures and table rows of a sweep or search campaign: PDR, NDR, ΔUCL95, CPU."""
    by_factor = plot_pdr_by_factor(result, figs / "pdr_by_factor")
    cpu = plot_cpu_per_load(store, result["experiments"], figs / "cpu_per_load")
    rows = [
        {
            **r,
            "pdr": _pps(r["pdr_pps"]),
            "ndr": _pps(r["ndr_pps"]),
            "worst": _num(r["worst_delta_ucl95_below_pdr"]),
            "cpu": _cpu(r["cpu_busy"]),
            "figure": figures.get((r["experiment_id"], r["label"])),
        }
        for r in result["experiments"]
    ]
    groups = []
    for g in result["groups"]:
        pdr = g["pdr_pps"]
        groups.append({
            **g,
            "n": g["experiments"],
            "pdr": _pps(pdr["median"]),
            "range": f"{_pps(pdr['min'])} .. {_pps(pdr['max'])}",
            "ndr": _pps(g["ndr_pps"]["median"]),
            "worst": _num(g["worst_delta_ucl95_below_pdr"]),
            "verdicts": ", ".join(f"{k} {v}" for k, v in g["verdicts"].items()),
            "cpu": _cpu(g["cpu_busy"]),
            "headline": f"PDR {_pps(pdr['median'])} ({_pps(pdr['min'])} .. {_pps(pdr['max'])})",
        })  # fmt: skip
    return by_factor, cpu, rows, groups


def _index_text(
    rows: list[dict[str, Any]], groups: list[dict[str, Any]], spec: dict, result: dict[str, Any]
) -> str:
    """What the report's index says of a campaign: its size and its ranked groups."""
    if not result["groups"]:
        return ""
    lines = [
        f"{len(rows)} experiment(s) of {len(spec.get('cells', []))} cell(s); factors: "
        + ", ".join(result["by"])
    ]
    lines += [
        f"#{g['rank']} "
        + " ".join(f"{k}={v}" for k, v in g["levels"].items())
        + f": {g['headline']}"
        for g in sorted(groups, key=lambda g: g["rank"])
    ]
    return "\n".join(lines)


def _verdict_class(v: str | None) -> str:
    return {"PASS": "GOOD", "FAIL": "BAD"}.get(v or "", "INCONCLUSIVE" if v else "")


def _cells(r: dict[str, Any], columns: list[Column]) -> dict[str, Any]:
    """A row (a cell or a group) as texts, each with its header; the verdict's class."""
    cells = [{"text": f(r), "cls": ""} for _, f in columns]
    if columns[0][0] == "verdict":
        cells[0]["cls"] = _verdict_class(r.get("verdict"))
    # a group's first column is its headline figure: "throughput 99.9 Mbit/s (...)"
    headline = f"{columns[0][0].split(' median')[0]} {cells[0]['text']}"
    return {**r, "cells": cells, "headline": headline}


def campaign_pages(store: Store, out: Path, entries: Sequence[Any], suffix: str = "") -> list[dict]:
    """One page per campaign of ``store`` in ``out/campaign-NAME{suffix}``, each cell
    linked to its PASTRAMI figure among ``entries`` (the index's experiments)."""
    if not CR.has_campaigns(store):
        return []
    figures = {
        (e.a.metadata.get("experiment_id"), e.a.label): f"../{e.figure_png}" for e in entries
    }
    names = list(
        dict.fromkeys(
            r["campaign"]["campaign"]
            for r in (e.metadata for e in store.experiments())
            if isinstance(r.get("campaign"), dict)
        )
    )
    return [
        render_page(store, n, out / f"campaign-{n}{suffix}", figures, "../index.html")
        for n in names
    ]


def save_pair(fig: Any, stem: Path) -> tuple[Path, Path]:
    png, svg = save(fig, stem)
    return png, svg
