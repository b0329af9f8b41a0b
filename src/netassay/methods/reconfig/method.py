"""Loss during a reconfiguration as a method (``methods.base.Method``): a load below the
SUT's throughput while a change runs in it; the frames lost and the effective blocked
time (kind ``reconfig``); assess, report and export read it. Not a campaign's method
(its change is the user's own command)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.methods.base import Comparison, Plan, Progress, RunOptions, Section, from_stores
from netassay.methods.plots import slugify
from netassay.methods.reconfig import run as R
from netassay.methods.reconfig import store as CS
from netassay.methods.reconfig import view as V
from netassay.methods.reconfig.request import RUN_OPTIONS, ReconfigRequest
from netassay.methods.render import FigureJob, data_of
from netassay.store.db import Experiment, Store

TRIAL_OVERHEAD_S = 0.5


class ReconfigMethod:
    name = "reconfig"
    kinds: tuple[str, ...] = (CS.KIND,)
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

    def prepare(self, request: ReconfigRequest, options: RunOptions) -> R.ReconfigJob:
        return R.prepare(request, options, options.config or Config())

    def run(self, request: ReconfigRequest, options: RunOptions, progress: Progress) -> Any:
        job = self.prepare(request, options)
        job.progress = job.note = progress
        return R.run(job)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[CS.StoredReconfig]:
        return from_stores(inputs, lambda _, store: CS.stored_reconfigs(store))

    def judged(self, result: Any) -> tuple[str, str | None]:
        return result.experiment.label, None

    def view(self, result: Any, as_json: bool) -> str:
        return V.as_json(result) if as_json else V.text(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        sections = []
        for r in CS.stored_reconfigs(store):
            stem = out / "figures" / f"reconfig_{slugify(r.experiment.label, used)}"
            job = FigureJob(
                "netassay.methods.reconfig.figures:plot_blocked", (r.summary,), stem,
                data_of(r.summary), kwargs={"title": r.experiment.label},
            )  # fmt: skip
            text = "\n".join(V.lines(r))
            sections.append(Section.drawn(f"reconfig: {r.experiment.label}", text, job, out))
        return sections

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = CS.summary(store, experiment)
        return {"verdict": None, "mean_blocked_s": s["mean_blocked_s"], "lost": s["lost"]}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""  # (not a campaign's method)


METHOD = ReconfigMethod()
