"""A store's curves in a report: each sweep (or PASTRAMI file imported) assessed, with
its PASTRAMI figure and, for netassay's own trials, where packets were lost."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig
from netassay.methods.plots import slugify
from netassay.methods.sweep.analyse import assess_store
from netassay.methods.sweep.latency import latency_rows
from netassay.store.db import Store
from netassay.trial.engine import SOURCE


@dataclass
class Entry:
    """One curve of a report: its assessment and its figures' files."""

    slug: str
    a: Assessment
    figure_png: str  # file name inside the report folder
    figure_svg: str
    loss_png: str | None
    data: dict[str, Any]
    latency_png: str | None = None  # a sweep run with --latency


def entries(
    store: Store, out: Path, cfg: AnalysisConfig, used: set[str], progress: bool
) -> list[Entry]:
    """Every curve of ``store``, its figures written to ``out/figures``."""
    from netassay.methods.sweep.figures import plot_assessment  # deferred: matplotlib

    found = []
    bar = _Bar(sum(1 for _ in store.experiments())) if progress else None
    for a in assess_store(store, cfg):
        slug = slugify(a.label, used)
        png, svg = plot_assessment(a, out / "figures" / slug)
        loss = _loss_figure(store, a, out / "figures" / f"{slug}_loss.png")
        latency = _latency_figure(store, a, out / "figures" / f"{slug}_latency.png")
        found.append(
            Entry(slug, a, f"figures/{png.name}", f"figures/{svg.name}", loss, a.to_json(), latency)
        )
        if bar:
            bar.advance()
    if bar:
        bar.close()
    return found


def _loss_figure(store: Store, a: Assessment, path: Path) -> str | None:
    """Stacked bars of where packets were lost, for netassay's own trials that carry
    loss locations (an imported file's single NIC counter is not drawn)."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or store.experiment(exp_id).source != SOURCE:
        return None
    trials = store.trials(exp_id)
    if not any(t.get("loss_location") for t in trials):
        return None
    from netassay.methods.sweep.loss_figure import plot_loss_location  # deferred: matplotlib

    plot_loss_location(trials, [float(r) for r in a.table.rate_pps], path)
    return f"figures/{path.name}"


def _latency_figure(store: Store, a: Assessment, path: Path) -> str | None:
    """Latency against load and the histograms, for a sweep whose trials hold them."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or not store.experiment(exp_id).config.get("latency"):
        return None
    rows = latency_rows(store, exp_id)
    if not rows:
        return None
    from netassay.methods.sweep.latency_figure import plot_latency  # deferred: matplotlib

    plot_latency(a, rows, path)
    return f"figures/{path.name}"


class _Bar:
    """The report's progress on a terminal (rich), one step per curve."""

    def __init__(self, total: int) -> None:
        self.p = Progress(TextColumn("report"), BarColumn(), MofNCompleteColumn(), transient=True)
        self.task = self.p.add_task("report", total=total)
        self.p.start()

    def advance(self) -> None:
        self.p.advance(self.task)

    def close(self) -> None:
        self.p.stop()
