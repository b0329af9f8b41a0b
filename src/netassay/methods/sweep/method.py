"""The sweep as a method (``methods.base.Method``): what the registry knows of it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay.analysis import compare as analysis_compare
from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.errors import Interrupted
from netassay.loads import AUTO_TOP
from netassay.methods.base import Compared, CompareHow, Comparison, Plan, Progress, RunOptions
from netassay.methods.sweep import compare as sweep_compare
from netassay.methods.sweep.entries import curve_sections
from netassay.methods.sweep.request import RUN_OPTIONS, SweepRequest
from netassay.methods.sweep.run import Planned, Swept, dry_run, plan_of, prepare
from netassay.methods.sweep.view import LEGEND, ended, make_console, render
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

    def run(
        self, request: SweepRequest, options: RunOptions, progress: Progress
    ) -> Swept | Planned:
        """Run (or resume) the sweep: its request and knobs checked before anything is
        built, every trial stored as it ends, ``progress`` given each trial's line
        ('[n/total] ...') and the notes beside them. An interrupt (Ctrl-C, SIGTERM):
        Interrupted, saying what this run stored and how to continue it. With
        ``options.dry_run`` nothing: what it would run, which ``view`` shows."""
        if options.dry_run:
            return Planned(dry_run(request, options))
        cfg = options.config or Config()
        sw = prepare(request, options, cfg)
        sw.progress = sw.note = progress
        try:
            sweep_run.run(sw)
        except KeyboardInterrupt as exc:  # the testbed is already down when we get here
            raise Interrupted(
                "sweep interrupted",
                f"{sw.stored} trial(s) of this run are stored in {sw.db}",
                f"continue with 'netassay sweep --db {sw.db} --resume'",
            ) from exc
        return Swept(sw, cfg.analysis)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[Assessment]:
        """Every curve of the inputs: PASTRAMI files and folders, and stores' sweeps."""
        return sweep_analyse.iter_assessments(inputs, cfg)

    def judged(self, result: Assessment | Swept) -> tuple[str, str | None]:
        if isinstance(result, Swept):  # a run's: its experiment's assessment
            a = result.assessment
            return (a.label, a.verdict) if a is not None else (result.sweep.label, None)
        return result.label, result.verdict

    def view(self, result: Assessment | Swept | Planned, as_json: bool) -> str:
        """An assessment's table (or its JSON object); a run's end: where it stored what,
        its verdict and bounds with what its store holds beside them (or its
        assessment's JSON with those added: ``view.ended``; "" without a load)."""
        if isinstance(result, Planned):  # --dry-run: what it would run
            return result.text
        if isinstance(result, Swept):
            a = result.assessment
            if a is None:
                return "" if as_json else result.stored_line()
            text, lines = ended(result.sweep, a, self.view(a, True))
            return text if as_json else "\n".join([result.stored_line(), *lines])
        if as_json:
            return json.dumps(result.to_json(), allow_nan=False)
        console = make_console()
        with console.capture() as cap:
            render(result, console)
        return cap.get().removesuffix("\n")  # the caller ends the line

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """The store's curves (its sweeps, the PASTRAMI files imported): each the index's
        row and block (``Section.curve``), its figures as jobs to draw."""
        return curve_sections(store, out, cfg, used)

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
