"""The doctor as a method (``methods.base.Method``): is this host fit to measure, and up
to what load? Its checks are stored as they are judged (kind ``doctor``); assess,
report and export read them. It does not run as a campaign's cells."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.methods import lab
from netassay.methods.base import Comparison, Plan, Progress, RunOptions, Section, from_stores
from netassay.methods.doctor import run as doctor_run
from netassay.methods.doctor import store as doctor_store
from netassay.methods.doctor import view as doctor_view
from netassay.methods.doctor.request import NAME, RUN_OPTIONS, DoctorRequest, refuse_own_knobs
from netassay.methods.plots import slugify
from netassay.methods.render import FigureJob, data_of
from netassay.names import validate_name
from netassay.params import declared
from netassay.store.db import Experiment, Store

SETUP_S = 6.0  # three testbeds built, the environment captured, probes started


class DoctorMethod:
    name = "doctor"
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

    def prepare(self, request: DoctorRequest, options: RunOptions) -> doctor_run.Doctor:
        """The run, its request and knobs checked before anything is built."""
        request.validate()
        flags = {f.name: p.flag for f, p in declared(TestbedConfig)}
        refuse_own_knobs(options.testbed_flags, flags)
        name = validate_name(options.name or NAME)
        cfg = (options.config or Config()).testbed
        # the doctor's own SUT: the kernel router, XDP-counted, no ground truth
        cfg = replace(
            cfg, sut="router", sink="xdp", sut_cap_pps=None, sut_cap_reverse_pps=None, sut_drop=0.0
        )
        return doctor_run.Doctor(request, cfg, lab.store_path(options.db), name, options.label)

    def run(self, request: DoctorRequest, options: RunOptions, progress: Progress) -> Any:
        doc = self.prepare(request, options)
        doc.progress = progress
        return doctor_run.run(doc)

    def analyse(
        self, inputs: Sequence[Path], cfg: AnalysisConfig
    ) -> Iterator[doctor_store.StoredDoctor]:
        return from_stores(inputs, lambda _, store: doctor_store.stored_doctors(store))

    def judged(self, result: Any) -> tuple[str, str | None]:
        return result.experiment.label, result.summary["verdict"]

    def view(self, result: Any, as_json: bool) -> str:
        return doctor_view.as_json(result) if as_json else doctor_view.text(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """One section per stored doctor run: its checks in words, its rates drawn."""
        found = list(doctor_store.stored_doctors(store))
        if not found:
            return []
        sections = []
        for r in found:
            stem = out / "figures" / f"doctor_{slugify(r.experiment.label, used)}"
            title = f"{r.experiment.label}: {r.summary['verdict']}"
            job = FigureJob("netassay.methods.doctor.figures:plot_range", (r.checks,), stem,
                            data_of(r.checks), kwargs={"title": title})  # fmt: skip
            text = "\n".join(doctor_view.lines(r))
            sections.append(Section.drawn(f"doctor: {r.experiment.label}", text, job, out))
        return sections

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = doctor_store.summary(doctor_store.stored_checks(store, experiment.id))
        return {"verdict": s["verdict"], "trusted_pps": s["trusted_pps"]}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""  # (not a campaign's method)


METHOD = DoctorMethod()
