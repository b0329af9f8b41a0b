"""The sweep as a method (``methods.base.Method``): what the registry knows of it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay.analysis import compare as analysis_compare
from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.loads import AUTO_TOP
from netassay.methods.base import Compared, CompareHow, Comparison, Plan, Progress, RunOptions
from netassay.methods.sweep import compare as sweep_compare
from netassay.methods.sweep.entries import Entry, entries
from netassay.methods.sweep.request import RUN_OPTIONS, SweepRequest
from netassay.methods.sweep.run import plan_of, prepare
from netassay.methods.sweep.view import LEGEND, make_console, render
from netassay.params import request_from
from netassay.shared import sweep_analyse, sweep_plan, sweep_run
from netassay.shared.render import Section
from netassay.store.db import Experiment, Store
from netassay.units import fmt_rate

CELL_SETUP_S = 4.0  # a cell's process, its testbed, the environment, the peak probe


class SweepMethod:
    name = "sweep"
    kinds = sweep_analyse.KINDS
    request = SweepRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=(analysis_compare.PDR,),
        figures=analysis_compare.LAB_FIGURES,
        names=analysis_compare.LAB_NAMES,
    )
    cell_flags: tuple[str, ...] = ()
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ("rates", "runs", "duration", "settle")
    cell_setup_s = CELL_SETUP_S
    legend = LEGEND

    def plan(self, request: SweepRequest) -> Plan:
        p = plan_of(request)
        return Plan(p.count(), sweep_plan.estimate_s(p), tuple(sweep_plan.describe(p).splitlines()))

    def prepare(self, request: SweepRequest, options: RunOptions) -> sweep_run.Sweep:
        return prepare(request, options, options.config or Config())

    def run(
        self, request: SweepRequest, options: RunOptions, progress: Progress
    ) -> sweep_run.Sweep:
        sw = self.prepare(request, options)
        sw.progress = progress
        return self.execute(sw)

    def execute(self, sw: sweep_run.Sweep) -> sweep_run.Sweep:
        """Run (or resume) a prepared sweep; every trial is stored as it ends."""
        sweep_run.run(sw)
        return sw

    def assessed(self, sw: sweep_run.Sweep, cfg: AnalysisConfig) -> Assessment | None:
        """PASTRAMI's assessment of the experiment a sweep stored (None: no load)."""
        assert sw.experiment_id is not None  # a sweep that ran has its experiment
        with Store(sw.db, readonly=True) as store:
            return sweep_analyse.assess_experiment(store, store.experiment(sw.experiment_id), cfg)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[Assessment]:
        """Every curve of the inputs: PASTRAMI files and folders, and stores' sweeps."""
        return sweep_analyse.iter_assessments(inputs, cfg)

    def judged(self, result: Assessment) -> tuple[str, str | None]:
        return result.label, result.verdict

    def view(self, result: Assessment, as_json: bool) -> str:
        if as_json:
            return json.dumps(result.to_json(), allow_nan=False)
        console = make_console()
        with console.capture() as cap:
            render(result, console)
        return cap.get().removesuffix("\n")  # the caller ends the line

    def entries(self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str]) -> list[Entry]:
        """The store's curves for the report's table, their figures as jobs to draw."""
        return entries(store, out, cfg, used)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        return []  # the report's main table is the sweeps' (report.build)

    def compare(self, store: Store, how: CompareHow) -> Compared | None:
        """The store's sweeps outside a campaign side by side, ranked by PDR (None: fewer
        than two)."""
        result = sweep_compare.compared(store, AnalysisConfig())
        return None if result is None else Compared(result, sweep_compare.compare_text(result))

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        a = sweep_analyse.assess_experiment(store, experiment, cfg)
        return {
            "verdict": a.verdict if a else None,
            "pdr_pps": a.pdr.rate_pps if a else None,
            "ndr_pps": a.ndr.rate_pps if a else None,
            "worst_delta_ucl95_below_pdr": a.worst_delta_below_pdr() if a else None,
            # the bound is the highest load tested (or stops below one not measured):
            # the SUT's is at least that, no load above it showed where it ends
            "pdr_at_least": a.pdr.at_least if a else False,
            "ndr_at_least": a.ndr.at_least if a else False,
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        """A cell's plan in brief, for 'campaign plan'."""
        req = request_from(SweepRequest, settings)
        p = plan_of(req)
        both = " per direction, both at once" if req.bidirectional else ""
        loads = (
            f"up to {AUTO_TOP:g}x the MRR (a flood measures it first)"
            if p.auto
            else f"{fmt_rate(p.rates_pps[0])}..{fmt_rate(p.rates_pps[-1])}"
        )
        return f"{loads}{both}, {p.loads} loads x {p.runs} runs x {p.duration_s:g} s"


METHOD = SweepMethod()
