"""A store's curves in a report: each sweep (or PASTRAMI file imported) assessed, with
its PASTRAMI figure and, for netassay's own trials, where packets were lost; each a
section of the report's main table (``shared.render.Curve``: ``index`` says its row,
its block and its LaTeX figure)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig
from netassay.hist import SinkHist
from netassay.methods.sweep import index
from netassay.methods.sweep.located import left_out
from netassay.shared.directions import DIRECTIONS, direction_rows, directions_json
from netassay.shared.imix_sizes import stored_mix
from netassay.shared.plots import slugify
from netassay.shared.rates import rates_lines
from netassay.shared.render import Curve, FigureJob, Section
from netassay.shared.sweep_analyse import assess_store
from netassay.shared.sweep_latency import direction_latency_rows, latency_rows
from netassay.store.db import Store
from netassay.trial.engine import SOURCE


def curve_sections(store: Store, out: Path, cfg: AnalysisConfig, used: set[str]) -> list[Section]:
    """Every curve of ``store`` as a section of the report's main table
    (``Section.curve``), its figures in ``out/figures`` as jobs: the report draws them
    on the host's cores, those already there from the same data kept
    (``shared/render.py``)."""
    found = []
    for a in assess_store(store, cfg):
        slug = slugify(a.label, used)
        stem = out / "figures" / slug
        curve = FigureJob(PLOT, (a,), stem, json.dumps(a.to_json(), sort_keys=True))
        loss = _loss_job(store, a, out / "figures" / f"{slug}_loss")
        latency = _latency_job(store, a, out / "figures" / f"{slug}_latency")
        jobs = tuple(j for j in (curve, loss, latency) if j is not None)
        mix, rates = _beside(store, a)
        png = f"figures/{slug}.png"
        shown = index.fields(slug, a, f"figures/{slug}.svg", mix, rates, both_ways(store, a))
        images = {"figure": png, "loss": _png(loss), "latency": _png(latency)}
        row = Curve(a, shown, images, png, index.latex(slug, a, png))
        found.append(Section(a.label, jobs=jobs, curve=row))
    return found


PLOT = "netassay.methods.sweep.figures:plot_assessment"  # imported to draw (matplotlib)


def _beside(store: Store, a: Assessment) -> tuple[dict[str, Any] | None, list[str] | None]:
    """A sweep's frame mix with its counts per size, and its loads as written in bit/s
    or as shares (None: one frame size; loads in frames/s)."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or store.experiment(exp_id).source != SOURCE:
        return None, None
    rates = store.experiment(exp_id).metadata.get("rates")
    return stored_mix(store, exp_id), rates_lines(rates) if rates else None


def both_ways(store: Store, a: Assessment) -> dict[str, Any] | None:
    """A ``--bidirectional`` sweep's table per direction (``directions_json``), with each
    direction's latency per load when its trials kept histograms (None: one direction)."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or store.experiment(exp_id).source != SOURCE:
        return None
    rows = direction_rows(store, exp_id)
    if not rows:
        return None
    doc = directions_json(rows)
    latency = {d: direction_latency_rows(store, exp_id, d) for d in DIRECTIONS}
    if any(latency.values()):
        doc["latency"] = {d: [r.to_json() for r in rs] for d, rs in latency.items()}
    return doc


def _loss_job(store: Store, a: Assessment, stem: Path) -> FigureJob | None:
    """Stacked bars of where packets were lost, for netassay's own trials that carry
    loss locations (an imported file's single NIC counter is not drawn)."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or store.experiment(exp_id).source != SOURCE:
        return None
    trials = store.trials(exp_id)
    if not any(t.get("loss_location") for t in trials):
        return None
    rates = [float(r) for r in a.table.rate_pps]
    # its key: every trial (kept or left out, and why), the loads, and the note it writes
    # under the bars naming the loads whose trials were left out (``located.left_out``)
    data = json.dumps([trials, rates, left_out(trials, rates)], sort_keys=True, default=str)
    return FigureJob(draw_loss, (trials, rates), stem, data, (".png",))


def draw_loss(trials: list[dict[str, Any]], rates: list[float], stem: Path) -> None:
    """The loss-location figure of one curve, as ``stem.png``."""
    from netassay.methods.sweep.loss_figure import plot_loss_location  # deferred: matplotlib

    plot_loss_location(trials, rates, stem.with_name(f"{stem.name}.png"))


def _latency_job(store: Store, a: Assessment, stem: Path) -> FigureJob | None:
    """Latency against load and the histograms, for a sweep whose trials hold them."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or not store.experiment(exp_id).config.get("latency"):
        return None
    rows = latency_rows(store, exp_id)
    if not rows:
        return None
    data = json.dumps([a.to_json(), [asdict(r) for r in rows]], sort_keys=True, default=_held)
    return FigureJob(draw_latency, (a, rows), stem, data, (".png",))


def _held(v: Any) -> Any:
    """A value of a latency row for the figure's key: a histogram by what it holds (its
    repr names its address, new in every process: the figure was drawn at every run)."""
    return v.to_json() if isinstance(v, SinkHist) else str(v)


def draw_latency(a: Assessment, rows: list[Any], stem: Path) -> None:
    """The latency figure of one curve, as ``stem.png``."""
    from netassay.methods.sweep.latency_figure import plot_latency  # deferred: matplotlib

    plot_latency(a, rows, stem.with_name(f"{stem.name}.png"))


def _png(job: FigureJob | None) -> str | None:
    return f"figures/{job.stem.name}.png" if job is not None else None
