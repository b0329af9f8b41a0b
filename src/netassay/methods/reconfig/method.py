"""Loss during a reconfiguration as a method (``methods.base.Method``): a load below the
SUT's throughput while a change runs in it; the frames lost and the effective blocked
time (kind ``reconfig``); assess, report and export read it. Not a campaign's method
(its change is the user's own command)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from netassay.config import AnalysisConfig, TestbedConfig
from netassay.methods.base import (
    Comparison,
    OneFigureMethod,
    Plan,
)
from netassay.methods.reconfig import run, view
from netassay.methods.reconfig import store as reconfig_store
from netassay.methods.reconfig.request import RUN_OPTIONS, ReconfigRequest
from netassay.store.db import Experiment, Store

TRIAL_OVERHEAD_S = 0.5


class ReconfigMethod(OneFigureMethod):
    name = "reconfig"
    _runner, _views = run, view
    _figure = "netassay.methods.reconfig.figures:plot_blocked"
    kinds: tuple[str, ...] = (reconfig_store.KIND,)
    request = ReconfigRequest
    campaign = False
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("mean_blocked_s",),
        figures=("mean_blocked_s",),
        lowest_first=True,
        names={"mean_blocked_s": ("effective blocked time", 1e-3, "blocked time (ms)")},
    )
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ()
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = 0.0
    legend = ""

    def plan(self, request: ReconfigRequest) -> Plan:
        per = request.duration_s + request.wait_s + TRIAL_OVERHEAD_S
        return Plan(request.trials, request.trials * per, ())

    def _stored(self, store: Store) -> Iterator[reconfig_store.StoredReconfig]:
        return reconfig_store.stored_reconfigs(store)

    def _figure_args(self, store: Store, result: Any) -> tuple[Any, ...]:
        return (result.summary,)  # the blocked time per trial is in its summary

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = reconfig_store.summary(store, experiment)
        return {"verdict": None, "mean_blocked_s": s.mean_blocked_s, "lost": s.lost}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""  # (not a campaign's method)


METHOD = ReconfigMethod()
