"""The acceptance test as a method (``methods.base.Method``): what the registry knows."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from netassay.analysis.acceptance import fmt_bps, fmt_pct
from netassay.config import AnalysisConfig
from netassay.methods.accept import page
from netassay.methods.accept import store as accept_store
from netassay.methods.accept.request import RUN_OPTIONS, AcceptRequest
from netassay.methods.accept.result import Accepted, AcceptResult
from netassay.methods.accept.run import measure_each
from netassay.methods.accept.view import (
    accept_group_text,
    ran,
    stored_summaries,
    summary,
    text_lines,
)
from netassay.methods.base import (
    Comparison,
    NothingCompared,
    Plan,
    Progress,
    RunOptions,
    from_stores,
    span,
)
from netassay.shared.render import Section
from netassay.store.db import Experiment, Store

RUN_OVERHEAD_S = 0.6  # per run: the pause between runs, the tools started
CELL_SETUP_S = 1.5  # per cell: its process, the embedded link built and removed
RAMP_STEPS = 4  # 25, 50, 75 and 100% of the contract


@dataclass(frozen=True)
class StoredTest:
    """An acceptance test as ``assess`` finds it: its store and its assess object."""

    db: Path
    summary: dict[str, Any]


def _bps(v: float | None) -> str:
    return "-" if v is None else fmt_bps(v)


def _ci(ci: Any) -> str:
    return f"{_bps(ci[0])} .. {_bps(ci[1])}" if ci else "-"


class AcceptMethod(NothingCompared):
    name = "accept"
    kinds = (accept_store.KIND,)
    request = AcceptRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("throughput_bps", "loss_ratio"),
        figures=("throughput_bps", "loss_ratio", "failed_seconds"),
        names={
            "throughput_bps": ("throughput", 1e6, "throughput (Mbit/s)"),
            "loss_ratio": ("loss ratio", 1.0, "loss ratio"),
        },
        columns=(
            ("verdict", lambda r: r["verdict"] or "-"),
            ("throughput", lambda r: _bps(r["throughput_bps"])),
            ("95% CI", lambda r: _ci(r["throughput_ci95_bps"])),
            ("loss", lambda r: fmt_pct(r["loss_ratio"])),
            ("failed seconds", lambda r: f"{r['failed_seconds']} of {r['graded_seconds']}"),
            ("runs", lambda r: str(r["trials"])),
            ("CPU busy per core", lambda r: _cores(r["cpu_busy"])),
            ("reason", lambda r: r["reason"]),
        ),
        group_columns=(
            ("throughput median (range)", lambda g: span(_bps, g["throughput_bps"])),
            ("loss median", lambda g: fmt_pct(g["loss_ratio"]["median"])),
            ("failed seconds median", lambda g: _num(g["failed_seconds"]["median"])),
            ("verdicts", lambda g: ", ".join(f"{k} {v}" for k, v in g["verdicts"].items())),
            ("CPU busy", lambda g: _cores(g["cpu_busy"])),
        ),
        group_text=accept_group_text,
        progress_rows="accept_runs",
    )
    cell_flags = ("--embedded",)
    knobs = None
    cell_defaults: tuple[str, ...] = ("layer", "runs", "duration")
    cell_setup_s = CELL_SETUP_S
    legend = ""

    def plan(self, request: AcceptRequest) -> Plan:
        """The ramp steps and the sustained runs, each with its overhead."""
        ramp = RAMP_STEPS if request.ramp else 0
        runs = request.runs
        est = ramp * request.ramp_step_s + runs * request.duration_s
        return Plan(ramp + runs, est + (ramp + runs) * RUN_OVERHEAD_S, ())

    def run(self, request: AcceptRequest, options: RunOptions, progress: Progress) -> Accepted:
        """The test, or one per scenario of its matrix (``request.scenarios``), each
        stored as it ends; an interrupt: ``Interrupted``, saying how many are stored."""
        req = replace(request, db=options.db, name=options.name or request.name,
                      label=options.label)  # fmt: skip
        return measure_each(req, progress)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[StoredTest]:
        return from_stores(inputs, lambda p, st: (StoredTest(p, s) for s in stored_summaries(st)))

    def judged(self, result: StoredTest | AcceptResult) -> tuple[str, str | None]:
        """A stored test's (``analyse``) or a test of a run's (``Accepted.tests``)."""
        if isinstance(result, AcceptResult):
            return result.test.label or result.test.name, result.verdict.verdict
        return result.summary.get("label") or "acceptance test", result.summary.get("verdict")

    def view(self, result: StoredTest | Accepted, as_json: bool) -> str:
        """A run's tests as ``accept`` says them when it ends, or a stored test as
        ``assess`` shows it."""
        if isinstance(result, Accepted):
            return ran(result, as_json)
        if as_json:
            return json.dumps(
                {**result.summary, "db": str(result.db)}, allow_nan=False, default=str
            )
        return "\n" + "\n".join(text_lines(result.summary))

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """The page of the store's acceptance tests in ``out/accept{suffix}``."""
        if next(iter(accept_store.accept_experiments(store)), None) is None:
            return []
        place = f"accept{suffix}"
        tests, jobs, write = page.of_store(store, out / place)
        text = "\n".join(f"{s['label']}: {s['verdict']} ({s['reason']})" for s in tests)
        return [Section(title="acceptance tests (accept)", text=text, link=f"{place}/index.html",
                        jobs=tuple(jobs), page=write)]  # fmt: skip

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        """An acceptance cell: its verdict and figures as ``assess`` gives them, CPU busy
        per core as a share (like a sweep's)."""
        s = summary(accept_store.load_accept_test(store, experiment))
        return {
            "verdict": s["verdict"],
            "reason": s["reason"],
            "contract_bps": s["contract_bps"],
            "layer": s["layer"],
            "trials": s["runs"] + s["ramp_steps"],
            "throughput_bps": s["throughput_bps"],
            "throughput_ci95_bps": s["throughput_ci95_bps"],
            "loss_ratio": s["loss_ratio"],
            "failed_seconds": len(s["failed_seconds"]),
            "graded_seconds": s["graded_seconds"],
            "cpu_busy": {c: round(v / 100, 4) for c, v in s["cpu_busy_pct"].items()},
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        """A cell's plan in brief, for 'campaign plan' (as the file writes it)."""
        s = settings
        return f"contract {s.get('contract', '?')}, {s['runs']} runs x {s['duration']}"


def _num(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.3g}"


def _cores(c: dict[str, float]) -> str:
    """CPU busy per core on a page: 'cpu0 35% cpu1 80%'."""
    return " ".join(f"{k} {v:.0%}" for k, v in c.items()) or "-"


METHOD = AcceptMethod()
