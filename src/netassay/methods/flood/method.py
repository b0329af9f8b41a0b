"""The flood as a method (``methods.base.Method``): with ``--db`` each flood is stored
as it ends (kind ``mrr``), so assess, report, export, campaigns and compare read it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay import names
from netassay.analysis.acceptance import fmt_pct
from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.methods.base import (
    Compared,
    CompareHow,
    Comparison,
    Plan,
    Progress,
    RunOptions,
    from_stores,
    span,
)
from netassay.methods.flood import run as flood_run
from netassay.methods.flood import store as flood_store
from netassay.methods.flood import view as flood_view
from netassay.methods.flood.request import RUN_OPTIONS, FloodRequest
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.store.db import Experiment, Store
from netassay.units import fmt_rate

FLOOD_OVERHEAD_S = 1.0  # per flood: counters read before and after, the sink settling


@dataclass(frozen=True)
class StoredFlood:
    """A stored flood experiment as ``assess`` finds it: its store, itself, its figures."""

    db: Path
    experiment: Experiment
    summary: dict[str, Any]


def _ci(ci: Any) -> str:
    if not ci:
        return "-"
    return f"{fmt_rate(ci[0])} .. {fmt_rate(ci[1])}" + (" (bounds nothing)" if ci[0] < 0 else "")


class FloodMethod:
    name = "flood"
    kinds: tuple[str, ...] = (flood_store.KIND,)
    request = FloodRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("mrr_pps",),
        figures=("mrr_pps", "loss_ratio"),
        names={
            "mrr_pps": ("MRR", 1e3, "MRR (kpps)"),
            "loss_ratio": ("loss ratio", 1.0, "loss ratio"),
        },
        columns=(
            ("MRR (median of runs)", lambda r: fmt_rate(r["mrr_pps"])),
            ("95% CI", lambda r: _ci(r["mrr_ci95_pps"])),
            ("lost", lambda r: fmt_pct(r["loss_ratio"])),
            ("runs", lambda r: str(r["runs"])),
            ("not saturated", lambda r: str(r["unsaturated"])),
        ),
        group_columns=(
            ("MRR median (range)", lambda g: span(fmt_rate, g["mrr_pps"])),
            ("lost median", lambda g: fmt_pct(g["loss_ratio"]["median"])),
        ),
        group_text=flood_view.flood_group_text,
    )
    cell_flags: tuple[str, ...] = ()
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ("runs", "duration")
    cell_setup_s = 4.0
    legend = ""

    def plan(self, request: FloodRequest) -> Plan:
        per = request.duration_s + FLOOD_OVERHEAD_S
        return Plan(request.runs, request.runs * per, ())

    def run(self, request: FloodRequest, options: RunOptions, progress: Progress) -> Any:
        name = options.name or names.DEFAULT_NAME
        cfg = (options.config or Config()).testbed
        cfg = flood_run.testbed_for(name, options.testbed_flags, cfg, options.seen)
        show = lambda i, f: progress(flood_view.flood_line(i, f))  # noqa: E731
        return flood_run.measure(request, name, cfg, show, options.db, options.label)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[StoredFlood]:
        return from_stores(
            inputs,
            lambda p, st: (StoredFlood(p, exp, s) for exp, s in flood_store.stored_floods(st)),
        )

    def judged(self, result: Any) -> tuple[str, str | None]:
        if isinstance(result, StoredFlood):
            return result.experiment.label, None
        return "flood", None  # a flood measures; it judges nothing

    def view(self, result: Any, as_json: bool) -> str:
        if isinstance(result, StoredFlood):
            exp, s = result.experiment, result.summary
            if as_json:
                return flood_view.stored_json(exp, s, str(result.db))
            return "\n" + "\n".join(flood_view.stored_lines(exp, s))
        return flood_view.as_json(result) if as_json else flood_view.summary_line(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """One section per stored flood experiment: its MRR in words, run by run, and
        its figure (PNG inline, SVG linked)."""
        found = list(flood_store.stored_floods(store))
        if not found:
            return []
        sections = []
        for exp, s in found:
            stem = out / "figures" / f"mrr_{slugify(exp.label, used)}"
            cap = exp.metadata.get("sut_cap_pps")
            trials = store.trials(exp.id)
            job = FigureJob("netassay.methods.flood.figures:plot_mrr", (trials, cap), stem,
                            data_of(trials, cap), kwargs={"title": exp.label})  # fmt: skip
            text = "\n".join(flood_view.stored_lines(exp, s))
            sections.append(Section.drawn(f"flood (MRR): {exp.label}", text, job, out))
        return sections

    def compare(self, store: Store, how: CompareHow) -> Compared | None:
        """The store's flood experiments side by side, ranked by their median MRR (None:
        it holds none): what ``compare`` shows of a store's floods."""
        found = list(flood_store.stored_floods(store))
        if not found:
            return None
        rows = [
            {"experiment_id": exp.id, "label": exp.label, "sut": exp.metadata.get("sut"),
             "sut_cap_pps": exp.metadata.get("sut_cap_pps"), **s}
            for exp, s in found
        ]  # fmt: skip
        ranked = sorted(rows, key=lambda r: -(r["mrr_pps"] or 0.0))
        for rank, r in enumerate(ranked, 1):
            r["rank"] = rank
        result = {"kind": flood_store.KIND, "db": str(store.path), "experiments": rows}
        return Compared(result, flood_view.compare_text(result))

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        """A flood cell: the median MRR over its runs, their 95% CI, the frames lost."""
        s = flood_store.summary(store.trials(experiment.id))
        return {
            "verdict": None,
            "runs": s["runs"],
            "mrr_pps": s["mrr_pps"],
            "mrr_ci95_pps": s["mrr_ci95_pps"],
            "loss_ratio": s["loss_ratio"],
            "unsaturated": s["unsaturated"],
            "mrr_at_least": bool(s["unsaturated"]),  # the SUT lost nothing: it carries more
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        """A cell's plan in brief, for 'campaign plan' (as the file writes it)."""
        both = (
            ", both directions at once (rates aggregate)" if settings.get("bidirectional") else ""
        )
        return f"{settings['runs']} floods x {settings['duration']}{both}"


METHOD = FloodMethod()
