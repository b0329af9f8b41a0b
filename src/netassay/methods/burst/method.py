"""Back-to-back frames as a method (``methods.base.Method``): the longest burst at the
top rate the SUT forwards whole, in repeated tests (kind ``burst``); assess, report,
export and campaigns read it."""

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
from netassay.methods.burst import run, view
from netassay.methods.burst import store as burst_store
from netassay.methods.burst.request import RUN_OPTIONS, BurstRequest
from netassay.store.db import Experiment, Store

STEPS = 15  # bursts a test takes, about (log2 of the longest over the resolution)
BURST_OVERHEAD_S = 0.3  # per burst: counters read before and after, the sink settling
SEARCH_S = 60.0  # --throughput search: the short search first, about


def _frames(x: Any) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _floor(g: dict[str, Any]) -> str:
    """'>= ' before a group's mean burst when a test of it reached the longest burst tried."""
    return ">= " if g["mean_frames"].get("at_least") else ""


def _ms(x: Any) -> str:
    return "-" if x is None else f"{x * 1e3:.3g} ms"


class BurstMethod(OneFigureMethod):
    name = "burst"
    _runner, _views = run, view
    _figure = "netassay.methods.burst.figures:plot_bursts"
    kinds: tuple[str, ...] = (burst_store.KIND,)
    request = BurstRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("mean_frames",),
        figures=("mean_frames", "implied_buffer_s"),
        names={
            "mean_frames": ("longest lossless burst", 1.0, "burst (frames)"),
            "implied_buffer_s": ("implied buffer time", 1e-3, "buffer time (ms)"),
        },
        columns=(
            ("burst rate", lambda r: f"{r['rate_pps'] / 1e3:,.1f} kpps"),
            ("mean burst (frames)", lambda r: _frames(r["mean_frames"])),
            (
                "95% CI",
                lambda r: "-" if r["ci95_frames"] is None else f"+- {r['ci95_frames']:,.1f}",
            ),
            ("implied buffer", lambda r: _ms(r["implied_buffer_s"])),
            ("corrected buffer", lambda r: _ms(r["corrected_buffer_s"])),
            ("tests", lambda r: str(r["tests"])),
            ("at the limit", lambda r: str(r["at_limit"])),
        ),
        group_columns=(
            ("mean burst median (range)", lambda g: _floor(g) + span(_frames, g["mean_frames"])),
        ),
        group_text=lambda g: (
            f"longest lossless burst {_floor(g)}{span(_frames, g['mean_frames'])} frames; "
            f"implied buffer {span(_ms, g['implied_buffer_s'])}"
        ),
    )
    knobs = TestbedConfig
    cell_defaults: tuple[str, ...] = ("tests", "wait", "resolution")
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = 6.0
    legend = ""

    def plan(self, request: BurstRequest) -> Plan:
        per = request.wait_s + BURST_OVERHEAD_S
        first = SEARCH_S if request.throughput == "search" else 0.0
        return Plan(None, first + request.tests * STEPS * per, ())

    def _stored(self, store: Store) -> Iterator[burst_store.StoredBurst]:
        return burst_store.stored_bursts(store)

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = burst_store.summary(store, experiment)
        keys = ("rate_pps", "mean_frames", "ci95_frames", "implied_buffer_s",
                "corrected_buffer_s", "tests", "at_limit")  # fmt: skip
        # a test that forwarded the longest burst tried makes the mean a floor
        return {
            "verdict": None,
            **{k: getattr(s, k) for k in keys},
            "mean_frames_at_least": s.at_limit > 0,
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return f"{settings['tests']} tests, {settings['wait']} idle after each burst"


METHOD = BurstMethod()
