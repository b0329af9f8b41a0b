"""The soak as a method (``methods.base.Method``): one long trial at a fixed load, run
as stored segments read every second, judged against a goal loss ratio (kind
``soak``); assess, report and export read it. It does not run as a campaign's cells."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.methods.base import Comparison, Plan, Progress, RunOptions, Section, from_stores
from netassay.methods.plots import slugify
from netassay.methods.render import FigureJob, data_of
from netassay.methods.soak import run as soak_run
from netassay.methods.soak import series
from netassay.methods.soak import store as soak_store
from netassay.methods.soak import view as soak_view
from netassay.methods.soak.request import RUN_OPTIONS, SoakRequest
from netassay.store.db import Experiment, Store

SEGMENT_OVERHEAD_S = 0.3  # per segment: counters read before and after, the sink settling


class SoakMethod:
    name = "soak"
    kinds: tuple[str, ...] = (soak_store.KIND,)
    request = SoakRequest
    campaign = False
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("loss_ratio",),
        figures=("loss_ratio",),
        names={"loss_ratio": ("loss ratio", 1.0, "loss ratio")},
    )
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ()
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = 0.0
    legend = ""

    def plan(self, request: SoakRequest) -> Plan:
        n = len(series.segment_lengths(request.duration_s, request.segment_s))
        return Plan(n, request.duration_s + n * SEGMENT_OVERHEAD_S, ())

    def prepare(self, request: SoakRequest, options: RunOptions) -> Any:
        """The soak to run (a resume: the stored one), checked before anything is built."""
        return soak_run.prepare(request, options, options.config or Config())

    def execute(self, soak: Any) -> soak_store.StoredSoak:
        """Run (or resume) a prepared soak; the stored soak."""
        return soak_run.run(soak)

    def run(self, request: SoakRequest, options: RunOptions, progress: Progress) -> Any:
        soak = self.prepare(request, options)
        soak.progress = soak.note = progress
        return self.execute(soak)

    def analyse(
        self, inputs: Sequence[Path], cfg: AnalysisConfig
    ) -> Iterator[soak_store.StoredSoak]:
        return from_stores(inputs, lambda _, store: soak_store.stored_soaks(store))

    def judged(self, result: Any) -> tuple[str, str | None]:
        return result.experiment.label, result.summary["verdict"]

    def view(self, result: Any, as_json: bool) -> str:
        return soak_view.as_json(result) if as_json else soak_view.text(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """One section per stored soak: its verdict and events in words, its timeline."""
        found = list(soak_store.stored_soaks(store))
        if not found:
            return []
        sections = []
        for r in found:
            trials = store.trials(r.experiment.id)
            seconds = series.timeline(trials)
            starts = [float(t["counters"].get("soak", {}).get("start_s", 0.0)) for t in trials]
            stem = out / "figures" / f"soak_{slugify(r.experiment.label, used)}"
            title = f"{r.experiment.label}: {r.summary['verdict']}"
            # the seconds are both directions' sum with --bidirectional: so is the offer
            offered = float(r.summary["rate_pps"]) * (2 if "bidirectional" in r.summary else 1)
            args = (seconds, starts, r.summary["events"], offered)
            job = FigureJob("netassay.methods.soak.figures:plot_timeline", args, stem,
                            data_of(*args), kwargs={"title": title})  # fmt: skip
            text = "\n".join([*soak_view.lines(r), soak_view.CAVEAT])
            sections.append(Section.drawn(f"soak: {r.experiment.label}", text, job, out))
        return sections

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = soak_store.soak_summary(store, experiment)
        return {"verdict": s["verdict"], "loss_ratio": s["loss_ratio"]}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""  # (not a campaign's method)


METHOD = SoakMethod()
