"""A campaign's page of the report: the matrix (one row per cell experiment: factors,
verdict, PDR, NDR, CPU, a link to its PASTRAMI figure), PDR per factor level with its
spread, the comparison (groups and each factor's test and effect sizes), CPU use per
core per load, and a sweep's loss by location per load for each cell side by side (where
the loss moves from one level of a factor to another: seed 003's Fig. 5). Figures inline
(the page works offline), SVGs beside them. The figures are jobs (``shared/render.py``)
drawn from what the store holds, read here: kept while it is the same."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from netassay import methods as registry
from netassay.analysis.compare import P99_AT_PDR
from netassay.campaign import results
from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS
from netassay.methods.base import Column
from netassay.shared.loss_located import loss_shares
from netassay.shared.plots import data_uri
from netassay.shared.render import FigureJob, Section, data_of, render
from netassay.store.db import Store
from netassay.units import fmt_latency, fmt_rate

CpuPerLoad = dict[str, dict[float, list[tuple[float, float]]]]  # core -> load -> (busy, steal)
FIGURES = "netassay.report.campaign_figures"  # imported to draw (matplotlib)


def cpu_per_load(store: Store, rows: Sequence[dict[str, Any]]) -> list[CpuPerLoad]:
    """Per cell experiment: each core's busy and steal shares of each trial, per load."""
    out = []
    for r in rows:
        per: CpuPerLoad = {}
        for t in store.trials(r["experiment_id"]):
            for core, c in (t.get("cpu") or {}).items():
                per.setdefault(core, {}).setdefault(t["rate_pps"], []).append(
                    (c.get("busy", 0.0), c.get("steal", 0.0))
                )
        out.append(per)
    return out


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


def any_loss(panels: list[tuple[Any, ...]]) -> bool:
    """Whether a cell of ``loss_panels`` lost a packet anywhere (else: no figure)."""
    return any(s[loc].any() for _, _, s in panels for loc in LOCATIONS)


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
            shift = results.shift_text(metric, c)
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
    """Draw the figures of campaign ``name`` and write ``out_dir/index.html``; return what
    the index shows."""
    section = page_section(store, name, out_dir, figures, index)
    render(section.jobs, processes=1)
    assert section.page is not None
    section.page()
    return section.as_dict()


def page_section(
    store: Store, name: str, out_dir: Path, figures: dict[tuple[int, str], str], index: str
) -> Section:
    """The index's entry of campaign ``name``: its figures as jobs, and its page in
    ``out_dir/index.html``, written once they are drawn."""
    result = results.comparison(store, [], name)
    found = store.campaign(name)
    spec: dict[str, Any] = found["spec"] if found is not None else {}
    comp = registry.method(result["method"]).comparison
    own = bool(comp.columns)  # a method with a page of its own (acceptance, rtt)
    figs = out_dir / "figures"
    loss = None
    if own:
        (by_factor, cpu), rows, groups = _own_tables(result, comp, figs)
    else:
        (by_factor, cpu), rows, groups = _sweep_tables(store, result, figs, figures)
        panels = loss_panels(store, result["experiments"])
        if any_loss(panels):
            loss = FigureJob(
                f"{FIGURES}:plot_loss_per_cell", (panels,), figs / "loss", data_of(panels)
            )
    shown = [m for m in comp.figures if any(r.get(m) is not None for r in result["experiments"])]
    side = FigureJob(
        f"{FIGURES}:plot_side_by_side", (result, shown), figs / "side_by_side",
        data_of(shown, [(r["factors"], [r.get(m) for m in shown]) for r in result["experiments"]]),
    ) if shown else None  # fmt: skip
    latency = any(r.get(P99_AT_PDR) is not None for r in result["experiments"])
    fields = {
        "name": name,
        "latency": latency and not own,
        "at_least": None
        if own
        else next(
            (
                results.AT_LEAST
                for r in result["experiments"]
                if r.get("pdr_at_least") or r.get("ndr_at_least")
            ),
            None,
        ),
        "figure_name": registry.metric(comp.figures[0])[0] if own else "PDR",
        "cols": [h for h, _ in comp.columns] if own else None,
        "gcols": [h for h, _ in comp.group_columns] if own else None,
        "method": spec.get("method", "sweep"),
        "cells": len(spec.get("cells", [])),
        "repetitions": spec.get("repetitions", 1),
        "seed": found["seed"] if found is not None else "-",
        "rows": rows,
        "factors": result["factors"],
        "by": result["by"],
        "groups": groups,
        "tests": _tests(result),
        "text": "\n".join(results.text(result)),
        "index": index,
    }
    jobs = tuple(j for j in (by_factor, cpu, loss, side) if j is not None)
    return Section(
        title=f"campaign: {name}",
        text=_index_text(rows, groups, spec, result),
        link=f"{out_dir.name}/index.html",
        jobs=jobs,
        page=_writer(out_dir, fields, by_factor, cpu, loss, side),
    )


def _writer(
    out_dir: Path, fields: dict[str, Any], pdr: FigureJob, cpu: FigureJob, loss: FigureJob | None,
    side: FigureJob | None,
) -> Callable[[], None]:  # fmt: skip
    """Writes a campaign's page once its figures are drawn (inline: it works offline)."""

    def write() -> None:
        page = (
            _environment()
            .get_template("campaign.html.j2")
            .render(
                **fields,
                pdr_png=data_uri(pdr.files()[0]),
                pdr_svg=f"figures/{pdr.files()[1].name}",
                cpu_png=data_uri(cpu.files()[0]),
                cpu_svg=f"figures/{cpu.files()[1].name}",
                loss_png=data_uri(loss.files()[0]) if loss else None,
                loss_svg=f"figures/{loss.files()[1].name}" if loss else None,
                side_png=data_uri(side.files()[0]) if side else None,
                side_svg=f"figures/{side.files()[1].name}" if side else None,
            )
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "index.html").write_text(page)

    return write


@cache
def _environment() -> Environment:
    """The report's templates, compiled once per process."""
    return Environment(
        loader=PackageLoader("netassay.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )


# a campaign page's figure jobs, its cells' table rows and its groups' rows
Tables = tuple[tuple[FigureJob, ...], list[dict[str, Any]], list[dict[str, Any]]]


def _own_tables(result: dict[str, Any], comp: Any, figs: Path) -> Tables:
    """Figure jobs and table rows of a method that names its own columns (acceptance,
    rtt)."""
    metric = comp.figures[0]
    effects = _effects(result, metric)
    by_factor = FigureJob(
        f"{FIGURES}:plot_pdr_by_factor",
        (result, metric),
        figs / f"{metric}_by_factor",
        data_of(effects),
    )
    rows = result["experiments"]
    cpu = FigureJob(f"{FIGURES}:plot_accept_cpu", (rows,), figs / "cpu_per_cell", data_of(rows))
    rows = [_cells(r, list(comp.columns)) for r in result["experiments"]]
    groups = [
        {**_cells(g, list(comp.group_columns)), "n": g["experiments"]} for g in result["groups"]
    ]
    return (by_factor, cpu), rows, groups


def _effects(result: dict[str, Any], metric: str) -> list[Any]:
    """What ``plot_pdr_by_factor`` draws of ``result``: the metric's effects and each
    experiment's factors and figure."""
    experiments = [(r["factors"], r[metric]) for r in result["experiments"]]
    effects = [e for e in result["effects"] if e.get("metric", "pdr_pps") == metric]
    return [metric, effects, experiments]


def _sweep_tables(
    store: Store, result: dict[str, Any], figs: Path, figures: dict[tuple[int, str], str]
) -> Tables:
    """Figure jobs and table rows of a sweep or search campaign: PDR, NDR, ΔUCL95, CPU."""
    by_factor = FigureJob(
        f"{FIGURES}:plot_pdr_by_factor", (result, "pdr_pps"), figs / "pdr_by_factor",
        data_of(_effects(result, "pdr_pps")),
    )  # fmt: skip
    cells = result["experiments"]
    per_load = cpu_per_load(store, cells)
    titles = [(r["factors"], r["block"]) for r in cells]
    draw = f"{FIGURES}:plot_cpu_per_load"
    cpu = FigureJob(draw, (cells, per_load), figs / "cpu_per_load", data_of(titles, per_load))
    rows = [
        {
            **r,
            "pdr": (">= " if r.get("pdr_at_least") else "") + _pps(r["pdr_pps"]),
            "ndr": (">= " if r.get("ndr_at_least") else "") + _pps(r["ndr_pps"]),
            "worst": _num(r["worst_delta_ucl95_below_pdr"]),
            "p99": _latency(r.get(P99_AT_PDR)),
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
            "pdr": results.bound_text(pdr),
            "range": f"{_pps(pdr['min'])} .. {_pps(pdr['max'])}",
            "ndr": results.bound_text(g["ndr_pps"]),
            "worst": _num(g["worst_delta_ucl95_below_pdr"]),
            "p99": _latency((g.get(P99_AT_PDR) or {}).get("median")),
            "verdicts": ", ".join(f"{k} {v}" for k, v in g["verdicts"].items()),
            "cpu": _cpu(g["cpu_busy"]),
            "headline": f"PDR {results.bound_text(pdr)} ({_pps(pdr['min'])} .. {_pps(pdr['max'])})",
        })  # fmt: skip
    return (by_factor, cpu), rows, groups


def _latency(ns: float | None) -> str:
    return "-" if ns is None else fmt_latency(round(ns))


def _index_text(
    rows: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    spec: dict[str, Any],
    result: dict[str, Any],
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


def campaign_pages(
    store: Store, out: Path, entries: Sequence[Any], suffix: str = ""
) -> list[Section]:
    """One page per campaign of ``store`` in ``out/campaign-NAME{suffix}``, each cell
    linked to its PASTRAMI figure among ``entries`` (the index's experiments): the
    index's entries, their figures to draw and pages to write."""
    if not results.has_campaigns(store):
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
        page_section(store, n, out / f"campaign-{n}{suffix}", figures, "../index.html")
        for n in names
    ]
