"""The doctor as a method (``methods.base.Method``): is this host fit to measure, and up
to what load? Its checks are stored as they are judged (kind ``doctor``); assess,
report and export read them. It does not run as a campaign's cells."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from netassay.config import AnalysisConfig, TestbedConfig
from netassay.methods.base import Comparison, OneFigureMethod, Plan
from netassay.methods.doctor import run as doctor_run
from netassay.methods.doctor import store as doctor_store
from netassay.methods.doctor import view as doctor_view
from netassay.methods.doctor.request import RUN_OPTIONS, DoctorRequest
from netassay.store.db import Experiment, Store

SETUP_S = 6.0  # three testbeds built, the environment captured, probes started


class DoctorMethod(OneFigureMethod):
    name = "doctor"
    _runner, _views = doctor_run, doctor_view
    _figure = "netassay.methods.doctor.figures:plot_range"
    _judges = True
    kinds: tuple[str, ...] = (doctor_store.KIND,)
    request = DoctorRequest
    campaign = False
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("trusted_pps",),
        figures=("trusted_pps",),
        names={"trusted_pps": ("trusted range", 1e3, "trusted range (kpps)")},
    )
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ()
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = 0.0
    legend = ""

    def plan(self, request: DoctorRequest) -> Plan:
        e = doctor_run.QUICK if request.quick else doctor_run.FULL
        low = request.runs * request.frames_per_trial / request.low_load_pps
        probes = 3 * e.probes * doctor_run.PROBE_S + e.peak_probes * 0.5 + 1.0
        secs = low + probes + e.floods * e.flood_s + e.cap_s + e.drop_s + SETUP_S
        return Plan(request.runs + e.floods + 2, secs, ())

    def _stored(self, store: Store) -> Iterator[doctor_store.StoredDoctor]:
        return doctor_store.stored_doctors(store)

    def _figure_args(self, store: Store, result: Any) -> tuple[Any, ...]:
        return (result.checks,)  # its checks' rates drawn as a range

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = doctor_store.summary(doctor_store.stored_checks(store, experiment.id))
        return {"verdict": s.verdict, "trusted_pps": s.trusted_pps}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""  # (not a campaign's method)


METHOD = DoctorMethod()
