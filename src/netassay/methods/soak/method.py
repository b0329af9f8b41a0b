"""The soak as a method (``methods.base.Method``): one long trial at a fixed load, run
as stored segments read every second, judged against a goal loss ratio (kind
``soak``); assess, report and export read it. It does not run as a campaign's cells."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from netassay.config import AnalysisConfig, TestbedConfig
from netassay.errors import Interrupted
from netassay.methods.base import Comparison, OneFigureMethod, Plan
from netassay.methods.soak import run as soak_run
from netassay.methods.soak import series
from netassay.methods.soak import store as soak_store
from netassay.methods.soak import view as soak_view
from netassay.methods.soak.request import RUN_OPTIONS, SoakRequest
from netassay.store.db import Experiment, Store

SEGMENT_OVERHEAD_S = 0.3  # per segment: counters read before and after, the sink settling


class SoakMethod(OneFigureMethod):
    name = "soak"
    _runner, _views = soak_run, soak_view
    _figure = "netassay.methods.soak.figures:plot_timeline"
    _judges = True
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

    def _stored(self, store: Store) -> Iterator[soak_store.StoredSoak]:
        return soak_store.stored_soaks(store)

    def _figure_args(self, store: Store, result: Any) -> tuple[Any, ...]:
        """Its timeline: each second's counts, the segments' starts, the events where
        loss appears, and the load offered (both directions' sum with
        --bidirectional, as the seconds are)."""
        trials = store.trials(result.experiment.id)
        starts = [float(t["counters"].get("soak", {}).get("start_s", 0.0)) for t in trials]
        s = result.summary
        offered = float(s.rate_pps) * (2 if s.bidirectional is not None else 1)
        return (series.timeline(trials), starts, s.events, offered)

    def _interrupted(self, job: Any) -> Interrupted:
        """The segments stored before the interrupt, and how to go on."""
        why = f"{job.stored} segment(s) of this run are stored in {job.db}"
        todo = f"continue: netassay soak --db {job.db} --resume"
        return Interrupted("soak interrupted", why, todo)

    def _section_lines(self, result: Any) -> list[str]:
        return [*soak_view.lines(result), soak_view.CAVEAT]

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = soak_store.soak_summary(store, experiment)
        return {"verdict": s.verdict, "loss_ratio": s.loss_ratio}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""  # (not a campaign's method)


METHOD = SoakMethod()
