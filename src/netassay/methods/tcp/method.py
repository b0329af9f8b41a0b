"""The tcp method (``methods.base.Method``): TCP throughput over the embedded path of a
known delay, loss and rate, beside the bounds of seed 003 (kind ``tcp``); campaigns,
compare, assess, report and export reach it through the registry."""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from netassay.analysis.tcp import summary
from netassay.config import AnalysisConfig
from netassay.methods.base import (
    Comparison,
    NothingCompared,
    Plan,
    Progress,
    RunOptions,
    from_stores,
    span,
)
from netassay.methods.tcp import store as tcp_store
from netassay.methods.tcp import view as tcp_view
from netassay.methods.tcp.request import RUN_OPTIONS, TcpRequest
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.store.db import Experiment, Store

RUN_OVERHEAD_S = 1.0  # per transfer: iperf3's server and client started, counters read
CELL_SETUP_S = 2.5  # per cell: the path built (its delay line started), ping, teardown


class TcpMethod(NothingCompared):
    name = "tcp"
    kinds = (tcp_store.KIND,)
    request = TcpRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("throughput_bps",),
        figures=("throughput_bps", "retransmits"),
        names={
            "throughput_bps": ("throughput", 1e6, "throughput (Mbit/s)"),
            "retransmits": ("retransmits", 1.0, "retransmits per cell"),
        },
        columns=(
            ("throughput", lambda r: tcp_view.mbps(r["throughput_bps"])),
            ("95% CI", lambda r: _ci(r["throughput_ci95_bps"])),
            ("bound", lambda r: tcp_view.mbps(r["bound_bps"])),
            ("binds", lambda r: r["binds"] or "-"),
            ("retransmits", lambda r: str(r["retransmits"])),
            ("runs", lambda r: f"{r['used']} of {r['runs']}"),
        ),
        group_columns=(
            ("throughput median (range)", lambda g: span(tcp_view.mbps, g["throughput_bps"])),
        ),
        group_text=tcp_view.group_text,
        progress_rows=tcp_store.TABLE,
    )
    knobs = None
    cell_defaults: tuple[str, ...] = ("runs", "duration")
    cell_flags: tuple[str, ...] = ()
    cell_setup_s = CELL_SETUP_S
    legend = ""

    def plan(self, request: TcpRequest) -> Plan:
        per = request.omit_s + request.duration_s + RUN_OVERHEAD_S
        return Plan(request.runs, request.runs * per, ())

    def run(self, request: TcpRequest, options: RunOptions, progress: Progress) -> Any:
        from netassay.methods.tcp.run import measure  # deferred: the testbed and its tools

        return measure(request, options, progress)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[tcp_store.StoredTcp]:
        return from_stores(inputs, lambda _, store: tcp_store.stored_cells(store))

    def judged(self, result: tcp_store.StoredTcp) -> tuple[str, str | None]:
        label = result.experiment.label if result.experiment else "tcp"
        return label, None

    def view(self, result: tcp_store.StoredTcp, as_json: bool) -> str:
        return tcp_view.as_json(result) if as_json else tcp_view.text(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """The paper's figure of the store's TCP cells, and each cell in words."""
        cells = list(tcp_store.stored_cells(store))
        if not cells:
            return []
        text = "\n".join(line for c in cells for line in tcp_view.lines(c))
        title = "TCP over a lossy long path (tcp)"
        if not any(c.config.get("delay_s") is not None for c in cells):  # imported only
            return [Section(title=title, text=text)]
        stem = out / "figures" / f"tcp_{slugify('throughput vs loss' + suffix, used)}"
        draw = "netassay.methods.tcp.figures:plot_throughput_vs_loss"
        kwargs = {"title": "TCP throughput against random loss"}
        job = FigureJob(draw, (cells,), stem, data_of(cells), kwargs=kwargs)
        return [Section.drawn(title, text, job, out)]

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        runs = tcp_store.stored_runs(store, experiment.id)
        s = summary(runs)
        return {
            "verdict": None,
            "throughput_bps": s.throughput_bps,
            "throughput_ci95_bps": s.throughput_ci95_bps,
            "bound_bps": s.bound_bps,
            "binds": s.binds,
            "retransmits": s.retransmits,
            "runs": s.runs,
            "used": s.used,
            "trials": s.runs,
            "mss": statistics.median([m for r in runs if (m := r["mss_bytes"])] or [0]),
            "cpu_busy": _mean_cpu([r["cpu"] for r in runs if r.get("ok")]),
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        s = settings
        return f"{s.get('cc', 'cubic')}, {s['runs']} runs x {s['duration']}"


def _mean_cpu(per_run: list[dict[str, float]]) -> dict[str, float]:
    cores = sorted({c for d in per_run for c in d})
    return {c: round(statistics.fmean(d[c] for d in per_run if c in d), 4) for c in cores}


def _ci(ci: Any) -> str:
    return f"{tcp_view.mbps(ci[0])} .. {tcp_view.mbps(ci[1])}" if ci else "-"


METHOD = TcpMethod()
