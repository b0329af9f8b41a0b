"""Batching as a method (``methods.base.Method``): what the receiver sees of a paced
train (seed 003, section 3.4), stored as kind ``batching``; assess, report, export and
campaigns (a cell is one ``netassay batching``) reach it through the registry."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay.analysis.acceptance import fmt_pct
from netassay.config import AnalysisConfig
from netassay.errors import Interrupted
from netassay.methods.base import (
    Comparison,
    NothingCompared,
    Plan,
    Progress,
    RunOptions,
    from_stores,
    span,
)
from netassay.methods.batching import run as batching_run
from netassay.methods.batching import store as batching_store
from netassay.methods.batching import view as batching_view
from netassay.methods.batching.request import NAME, RUN_OPTIONS, BatchingRequest
from netassay.shared import lab
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.store.db import Experiment, Store
from netassay.units import fmt_us

FIGURES = "netassay.methods.batching.figures"  # imported to draw (matplotlib)

RUN_OVERHEAD_S = 0.3  # per run: the prober started, the capture points read, stored
SETUP_S = 1.5  # the testbed built, the knobs set, the warm-up train


class BatchingMethod(NothingCompared):
    name = "batching"
    kinds: tuple[str, ...] = (batching_store.KIND,)
    request = BatchingRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("wait_p50_ns", "share_in_bursts"),
        figures=("wait_p50_ns", "share_in_bursts", "burst_len_mean"),
        lowest_first=True,
        names={
            "wait_p50_ns": ("wait for the batch p50", 1e3, "wait p50 (us)"),
            "share_in_bursts": ("share in bursts", 1.0, "share of packets in bursts"),
            "burst_len_mean": ("mean burst length", 1.0, "mean burst length (packets)"),
        },
        columns=(
            ("wait p50", lambda r: fmt_us(r["wait_p50_ns"])),
            ("in bursts", lambda r: fmt_pct(r["share_in_bursts"])),
            ("mean burst", lambda r: f"{r['burst_len_mean']:.1f}"),
            ("runs", lambda r: str(r["runs"])),
        ),
        group_columns=(
            ("wait p50 median (range)", lambda g: span(fmt_us, g["wait_p50_ns"])),
            ("in bursts median", lambda g: fmt_pct(g["share_in_bursts"]["median"])),
            ("mean burst median", lambda g: f"{g['burst_len_mean']['median']:.1f}"),
        ),
        group_text=batching_view.group_text,
    )
    knobs = None
    cell_defaults: tuple[str, ...] = ("runs", "probe_rate")
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = SETUP_S
    legend = ""

    def plan(self, request: BatchingRequest) -> Plan:
        send = request.count / request.rate_pps
        return Plan(request.runs, SETUP_S + request.runs * (send + RUN_OVERHEAD_S), ())

    def run(self, request: BatchingRequest, options: RunOptions, progress: Progress) -> Any:
        """The measurement, its request checked before anything is built; each run is
        stored as it ends (an interrupt: Interrupted, saying how many are)."""
        b = batching_run.Batching(request, lab.store_path(options.db), options.name or NAME,
                                  options.label)  # fmt: skip
        request.validate(b.db, b.name)
        b.progress = progress
        try:
            return batching_run.measure(b)
        except KeyboardInterrupt as exc:  # the testbed is already down when we get here
            said = f"{b.stored} run(s) stored in {b.db}"
            raise Interrupted("batching interrupted", said) from exc

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[Any]:
        return from_stores(inputs, lambda _, store: batching_store.stored_batchings(store))

    def judged(self, result: Any) -> tuple[str, str | None]:
        return result.experiment.label, None  # it measures; it judges nothing

    def view(self, result: Any, as_json: bool) -> str:
        return batching_view.as_json(result) if as_json else batching_view.text(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """Two sections per stored experiment: its gaps against the sent spacing (with
        its figures in words), and its burst lengths."""
        found = list(batching_store.stored_batchings(store))
        if not found:
            return []
        sections = []
        for r in found:
            s, label = r.summary, r.experiment.label
            stem = out / "figures" / f"batching_{slugify(label, used)}"
            args = (r.runs, s.spacing_ns, s.gap_ns)
            gaps = FigureJob(f"{FIGURES}:plot_gaps", args, stem, data_of(*args),
                             kwargs={"title": label})  # fmt: skip
            sections.append(
                Section.drawn(f"batching: {label}", "\n".join(batching_view.lines(r)), gaps, out)
            )
            stem = out / "figures" / f"batching_bursts_{slugify(label, used)}"
            lengths = s.burst_lengths
            bursts = FigureJob(f"{FIGURES}:plot_bursts", (lengths,), stem, data_of(lengths),
                               kwargs={"title": f"{label}: burst lengths"})  # fmt: skip
            sections.append(Section.drawn(f"batching: {label}: burst lengths", "", bursts, out))
        return sections

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        s = batching_store.stored(store, experiment).summary
        return {
            "verdict": None,
            "runs": s.runs_stored,
            "wait_p50_ns": s.wait_p50_ns,
            "share_in_bursts": s.share_in_bursts,
            "burst_len_mean": s.burst_len_mean,
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        s = settings
        busy = f", busy-poll {s['busy_poll']} us" if s.get("busy_poll") else ""
        return f"{s['runs']} runs x {s.get('count', 2000)} probes at {s['probe_rate']}/s{busy}"


METHOD = BatchingMethod()
