"""The flood as a method (``methods.base.Method``): it stores nothing yet, so it has no
kinds, nothing to analyse or report, and no campaign cells."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay import names as N
from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.methods.base import Comparison, Plan, Progress, RunOptions, Section
from netassay.methods.flood import run as R
from netassay.methods.flood import view as V
from netassay.methods.flood.request import RUN_OPTIONS, FloodRequest
from netassay.store.db import Experiment, Store

FLOOD_OVERHEAD_S = 1.0  # per flood: counters read before and after, the sink settling


class FloodMethod:
    name = "flood"
    kinds: tuple[str, ...] = ()
    request = FloodRequest
    campaign = False
    run_options = RUN_OPTIONS
    comparison = Comparison(metrics=(), figures=())
    cell_flags: tuple[str, ...] = ()
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ()
    cell_setup_s = 4.0
    legend = ""

    def plan(self, request: FloodRequest) -> Plan:
        per = request.duration_s + FLOOD_OVERHEAD_S
        return Plan(request.runs, request.runs * per, ())

    def run(self, request: FloodRequest, options: RunOptions, progress: Progress) -> Any:
        name = options.name or N.DEFAULT_NAME
        cfg = (options.config or Config()).testbed
        cfg = R.testbed_for(name, options.testbed_flags, cfg)
        return R.measure(request, name, cfg, lambda i, f: progress(V.flood_line(i, f)))

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[Any]:
        return iter(())

    def judged(self, result: Any) -> tuple[str, str | None]:
        return "flood", None  # a flood measures; it judges nothing

    def view(self, result: Any, as_json: bool) -> str:
        return V.as_json(result) if as_json else V.summary_line(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        return []

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        return {}

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""


METHOD = FloodMethod()
