"""The search as a method (``methods.base.Method``): what the registry knows of it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.analysis import compare
from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.methods.base import (
    Comparison,
    NothingCompared,
    Plan,
    Progress,
    RunOptions,
    from_stores,
)
from netassay.methods.search import latency_at
from netassay.methods.search import run as search_run
from netassay.methods.search import view as search_view
from netassay.methods.search.request import RUN_OPTIONS, SearchRequest
from netassay.params import request_from
from netassay.shared import search_engine as engine
from netassay.shared import stored_search
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.shared.search_spec import MIN_LOAD_FRACTION, TIME_CAP_S, SearchSpec
from netassay.shared.sweep_analyse import assess_experiment
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S
from netassay.store.db import Experiment, Store

NOMINAL_MAX_PPS = 600_000.0  # the max load a plan assumes when the peak will set it
CELL_SETUP_S = 4.0  # a cell's process, its testbed, the environment, the peak probe


@dataclass(frozen=True)
class StoredSearch:
    """A search as ``assess`` finds it: its store, its experiment, what it found."""

    db: Path
    experiment: Experiment
    outcome: engine.SearchOutcome


class SearchMethod(NothingCompared):
    name = "search"
    kinds = (stored_search.KIND,)
    request = SearchRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=(compare.PDR,), figures=(*compare.LAB_FIGURES, compare.P99_AT_PDR),
        names={**compare.LAB_NAMES,
               compare.P99_AT_PDR: ("p99 at the PDR", 1e3, "p99 latency at PDR (us)")},
    )  # fmt: skip
    cell_flags: tuple[str, ...] = ()
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ()
    cell_setup_s = CELL_SETUP_S
    legend = ""

    def plan(self, request: SearchRequest) -> Plan:
        """The worst case of the search (simulated SUTs over the range) and its verify
        sweep: a search decides its trials as it goes."""
        hi = request.max_load_pps or NOMINAL_MAX_PPS
        lo = request.min_load_pps or hi * MIN_LOAD_FRACTION
        cap = request.time_cap_s or TIME_CAP_S
        est = engine.estimate(SearchSpec(request.make_goals(), lo, hi, cap))
        verify = 0.0
        if request.then_verify:
            vd = request.verify_duration_s or request.final_duration_s or 1.0
            per = vd + TRIAL_OVERHEAD_S + request.settle_s
            verify = request.verify_runs * request.verify_loads * per
        total = est.wall_time_s + est.trials * request.settle_s + verify
        return Plan(None, total, ())

    def run(self, request: SearchRequest, options: RunOptions, progress: Progress) -> Any:
        """Run (or resume) the search, then its verify sweep: the report, which ``view``
        shows (``SearchReport.check`` raises what a search that stopped early says); with
        ``options.dry_run`` nothing: the search prepared, which ``view`` shows as what it
        would run. An interrupt's notes say what of it is stored and how to go on."""
        job = search_run.prepare(request, options, options.config or Config())
        if options.dry_run:
            return job
        job.progress = job.note = progress
        try:
            return search_run.run(job)
        except KeyboardInterrupt as exc:  # the testbed is already down when we get here
            exc.add_note(f"{job.stored} trial(s) of it are stored in {job.db}")
            exc.add_note(f"continue with 'netassay search --db {job.db} --resume'")
            raise

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[StoredSearch]:
        return from_stores(
            inputs,
            lambda p, st: (StoredSearch(p, exp, o) for exp, o in stored_search.stored_searches(st)),
        )

    def judged(self, result: StoredSearch | search_run.SearchReport) -> tuple[str, str | None]:
        """A stored search judges nothing (its verify sweep is judged as a sweep); a
        search just run is judged by its verify sweep's verdict, when it ran one."""
        if isinstance(result, StoredSearch):
            return result.experiment.label, None
        if result.verify is None:
            return f"search {result.experiment_id}", None
        return f"the verify sweep (experiment {result.verify.experiment_id})", result.verify.verdict

    def view(
        self, result: StoredSearch | search_run.SearchReport | search_run.SearchJob, as_json: bool
    ) -> str:
        """A stored search (``analyse``), a search just run (its report), or one prepared
        with --dry-run (what it would run)."""
        if isinstance(result, search_run.SearchJob):
            return search_view.dry_run(result, as_json)
        if isinstance(result, search_run.SearchReport):
            if as_json:
                return json.dumps(search_view.report_json(result), allow_nan=False)
            return "\n".join(search_view.report_lines(result))
        exp, out = result.experiment, result.outcome
        if as_json:
            obj = {
                "kind": stored_search.KIND, "source": exp.source, "label": exp.label,
                "experiment_id": exp.id, "db": str(result.db), "verdict": None,
                "reason": "a search has no PASTRAMI verdict (see its verify sweep)",
                **search_view.outcome_json(out),
                **search_view.stored_extras(result.db, exp.id, out).to_json(),
            }  # fmt: skip
            return json.dumps(obj, allow_nan=False)
        lines = search_view.outcome_lines(out, f"{exp.label}, experiment {exp.id}")
        return "\n".join(
            lines
            + search_view.extras_lines(search_view.stored_extras(result.db, exp.id, out), out.spec)
        )

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """One section per search: its result in words, its load-time figure (PNG inline,
        SVG linked)."""
        found = []
        for exp, o in stored_search.stored_searches(store):
            stem = out / "figures" / f"search_{slugify(exp.label, used)}"
            trials = store.trials(exp.id)
            job = FigureJob("netassay.methods.search.figures:plot_stored", (trials, o), stem,
                            data_of(trials, o), kwargs={"title": exp.label})  # fmt: skip
            lines = search_view.outcome_lines(o, f"experiment {exp.id}")
            text = "\n".join(lines + search_view.cap_lines(search_view.over_caps(store, exp, o)))
            found.append(Section.drawn(f"search: {exp.label}", text, job, out))
        return found

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        """A search cell: its bounds, and the verdict of its verify sweep when it ran one
        (the cell's second experiment)."""
        o = stored_search.stored_outcome(store, experiment)
        bound = {g.goal.loss_ratio: g.lower_pps for g in o.goals}
        # no upper bound: the max load met the goal, the SUT's bound is at least the lower
        open_ = {g.goal.loss_ratio: g.lower_pps is not None and g.upper_pps is None
                 for g in o.goals}  # fmt: skip
        pdr = [k for k in sorted(bound) if k > 0]
        keeps = o.spec.keeps_latency
        latency = latency_at.at_bounds(store.trials(experiment.id), o) if keeps else []
        verify = store.find_experiment(f"{experiment.key}-2")
        checked = assess_experiment(store, verify, cfg) if verify else None
        return {
            "verdict": checked.verdict if checked else None,
            "pdr_pps": bound[pdr[0]] if pdr else None,
            "ndr_pps": bound.get(0.0),
            "worst_delta_ucl95_below_pdr": None,
            "pdr_at_least": open_[pdr[0]] if pdr else False,
            "ndr_at_least": open_.get(0.0, False),
            # with --latency: the p99 one-way latency of the trials at the PDR's lower bound
            compare.P99_AT_PDR: latency_at.p99_at(latency, f"pdr:{pdr[0]:g}") if pdr else None,
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        """A cell's plan in brief: with --bidirectional, that its loads are aggregate."""
        if request_from(SearchRequest, settings).bidirectional:
            return "both directions at once, aggregate loads (half per direction)"
        return ""


METHOD = SearchMethod()
