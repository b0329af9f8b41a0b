"""System recovery as a method (``methods.base.Method``): overloads and the time the SUT
takes to forward what it is offered again (kind ``recovery``); assess, report, export
and campaigns read it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from netassay.config import AnalysisConfig, TestbedConfig
from netassay.methods.base import (
    Comparison,
    OneFigureMethod,
    Plan,
    span,
)
from netassay.methods.recovery import run, view
from netassay.methods.recovery import store as recovery_store
from netassay.methods.recovery.request import RUN_OPTIONS, RecoveryRequest
from netassay.store.db import Experiment, Store

TRIAL_OVERHEAD_S = 0.5  # per trial: counters read before and after, the sink settling
SEARCH_S = 60.0  # --throughput search: the short search first, about


def _ms(x: Any) -> str:
    return "-" if x is None else f"{x * 1e3:.1f} ms"


class RecoveryMethod(OneFigureMethod):
    name = "recovery"
    _runner, _views = run, view
    _figure = "netassay.methods.recovery.figures:plot_recovery"
    kinds: tuple[str, ...] = (recovery_store.KIND,)
    request = RecoveryRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("mean_s",),
        figures=("mean_s",),
        lowest_first=True,
        names={"mean_s": ("recovery time", 1e-3, "recovery time (ms)")},
        columns=(
            ("throughput", lambda r: f"{r['throughput_pps'] / 1e3:,.1f} kpps"),
            ("overload", lambda r: f"{r['overload_pps'] / 1e3:,.1f} kpps"),
            ("recovery (mean)", lambda r: _ms(r["mean_s"])),
            ("95% CI", lambda r: "-" if r["ci95_s"] is None else f"+- {_ms(r['ci95_s'])}"),
            ("recovered", lambda r: f"{r['recovered']} of {r['trials']}"),
        ),
        group_columns=(("recovery median (range)", lambda g: span(_ms, g["mean_s"])),),
        group_text=lambda g: f"recovery time {span(_ms, g['mean_s'])}",
    )
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ("trials", "overload_time", "recover_time", "interval")
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = 4.0
    legend = ""

    def plan(self, request: RecoveryRequest) -> Plan:
        per = request.overload_s + request.recover_s + request.wait_s + TRIAL_OVERHEAD_S
        first = SEARCH_S if request.throughput == "search" else 0.0
        return Plan(request.trials, first + request.trials * per, ())

    def _stored(self, store: Store) -> Iterator[recovery_store.StoredRecovery]:
        return recovery_store.stored_recoveries(store)

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = recovery_store.summary(store, experiment)
        keys = ("throughput_pps", "overload_pps", "mean_s", "ci95_s", "recovered", "trials")
        return {"verdict": None, **{k: getattr(s, k) for k in keys}}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return (
            f"{settings['trials']} overloads of {settings['overload_time']}, then "
            f"{settings['recover_time']} at half, read every {settings['interval']}"
        )


METHOD = RecoveryMethod()
