"""The rtt measurement as a method (``methods.base.Method``): what the registry knows."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from netassay import names
from netassay.analysis.acceptance import fmt_pct
from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.hist import Figure, figure
from netassay.methods.base import Compared, CompareHow, Comparison, Plan, Progress, RunOptions, span
from netassay.methods.rtt import compare
from netassay.methods.rtt import page as rtt_page
from netassay.methods.rtt import run as rtt_run
from netassay.methods.rtt import store as rtt_store
from netassay.methods.rtt import view as rtt_view
from netassay.methods.rtt.request import RUN_OPTIONS, RttRequest
from netassay.methods.rtt.view import compare_text, rtt_group_text
from netassay.shared.render import Section
from netassay.store.db import Experiment, Store
from netassay.store.paths import open_store, store_paths
from netassay.units import fmt_us

RUN_OVERHEAD_S = 0.3  # per run: its capture points read, its run stored
CELL_SETUP_S = 1.5  # per cell: the testbed built and the path checked (measured here)
SETTLE_S = 1.0  # with a background load: it settles before the first run


@dataclass(frozen=True)
class StoredRtt:
    """What ``assess`` shows of a store's rtt runs: one comparison of its
    configurations."""

    db: Path
    segments: list[str]
    result: compare.RttComparison


class RttMethod:
    name = "rtt"
    kinds = (rtt_store.KIND,)
    request = RttRequest
    campaign = True
    run_options = RUN_OPTIONS
    comparison = Comparison(
        metrics=("rtt_p50_ns", "rtt_p99_ns"),
        figures=("rtt_p50_ns", "rtt_p99_ns", "loss_ratio"),
        names={
            "rtt_p50_ns": ("RTT p50", 1e3, "RTT p50 (us)"),
            "rtt_p99_ns": ("RTT p99", 1e3, "RTT p99 (us)"),
            "loss_ratio": ("loss ratio", 1.0, "loss ratio"),
        },
        lowest_first=True,
        columns=(
            ("RTT p50 (median of runs)", lambda r: fmt_us(r["rtt_p50_ns"])),
            ("RTT p99 (median of runs)", lambda r: fmt_us(r["rtt_p99_ns"])),
            ("lost", lambda r: fmt_pct(r["loss_ratio"])),
            ("runs", lambda r: str(r["runs"])),
        ),
        group_columns=(
            ("RTT p50 median (range)", lambda g: span(fmt_us, g["rtt_p50_ns"])),
            ("RTT p99 median", lambda g: fmt_us(g["rtt_p99_ns"]["median"])),
            ("lost median", lambda g: fmt_pct(g["loss_ratio"]["median"])),
        ),
        group_text=rtt_group_text,
    )
    cell_flags: tuple[str, ...] = ()
    knobs = None
    cell_defaults: tuple[str, ...] = ("runs", "probe_rate")
    cell_setup_s = CELL_SETUP_S
    legend = ""

    def plan(self, request: RttRequest) -> Plan:
        """Each run sends for its duration (or count / rate); a lost reply's timeout is
        not counted."""
        spec = request.spec()
        settle = SETTLE_S if (request.load or "none") != "none" else 0.0
        runs = request.runs
        return Plan(runs, settle + runs * (spec.send_time_s() + RUN_OVERHEAD_S), ())

    def run(
        self, request: RttRequest, options: RunOptions, progress: Progress
    ) -> rtt_run.Measurement:
        """Every run, each stored as it ends (in --db, when one is given) and said to
        ``progress`` in a line; the measurement, which ``view`` shows."""
        setup = rtt_run.setup_of(request, options.name or names.RTT_NAME, options.db, options.label)
        return rtt_run.measure_all(setup, lambda m, res: progress(rtt_view.text_line(m, res)))

    def compare(self, store: Store, how: CompareHow) -> Compared | None:
        """The store's rtt configurations compared (None: it holds no rtt run): the
        comparison, in words, and its page with its figures in ``how.out`` when one is
        given; a UsageError for a ``how.stat`` that is none."""
        stat = how.stat
        if stat not in compare.STATS:
            raise UsageError(
                f"unknown --stat '{stat}'", f"known: {', '.join(compare.STATS)}", "e.g. p50"
            )
        if next(iter(rtt_store.rtt_experiments(store)), None) is None:
            return None
        segments = list(how.segments) if how.segments is not None else None
        configs, shown, result = compare.comparison(
            store, list(how.by), segments, stat, paired=how.paired
        )
        out = how.out
        page = rtt_page.write_page(configs, shown, stat, result, Path(out)) if out else None
        return Compared(result.to_json(), compare_text(result, shown), page)

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[StoredRtt]:
        for p in store_paths(inputs):
            with open_store(p) as st:
                if next(iter(rtt_store.rtt_experiments(st)), None) is None:
                    continue
                _, segments, result = compare.comparison(st, [], None)
            yield StoredRtt(p, segments, result)

    def judged(self, result: StoredRtt) -> tuple[str, str | None]:
        return f"rtt runs in {result.db}", None  # it measures and compares

    def view(self, result: StoredRtt | rtt_run.Measurement, as_json: bool) -> str:
        """A store's rtt runs compared (``analyse``), or a measurement just run: as JSON
        a line per run then one per peer tool (--ping-too), in words its summary (its
        runs' lines were its progress)."""
        if isinstance(result, rtt_run.Measurement):
            m = result
            if as_json:
                lines = [rtt_view.json_line(m, r) for r in m.results]
                return "\n".join(lines + [rtt_view.json_peer(m, p) for p in m.peers])
            return "\n".join(rtt_view.text_summary(m))
        if as_json:
            return json.dumps(
                {"kind": "rtt", "db": str(result.db), **result.result.to_json()}, default=str
            )
        lines = [f"\nrtt runs in {result.db}:", *compare_text(result.result, result.segments)]
        return "\n".join(lines)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """The store's rtt comparison: its figures and page in ``out/rtt{suffix}``
        (``-N`` with several stores), linked from the index."""
        if next(iter(rtt_store.rtt_experiments(store)), None) is None:
            return []
        place = f"rtt{suffix}"
        configs, segments, result = compare.comparison(store, [], None)
        jobs = rtt_page.figures(configs, segments, "p50", out / place)
        write = rtt_page.writer(configs, segments, "p50", result, out / place, jobs)
        lines = [
            f"{row.configuration}: runs {row.runs}; "
            + ", ".join(
                f"{seg} p50 {median / 1e3:.1f} us"
                for seg in segments
                if (median := row.segments[seg]["median"]) is not None
            )
            for row in result.configurations
        ]
        return [Section(title="round-trip time (rtt)", text="\n".join(lines),
                        link=f"{place}/index.html", jobs=tuple(jobs), page=write)]  # fmt: skip

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]:
        """An rtt cell: the median over its runs (measurement faults left out) of each
        run's RTT p50 and p99, and the probes lost."""
        runs = [r for r in rtt_store.runs(store, experiment.id, blobs=False) if not r.excluded]

        def over_runs(stat: Figure) -> float | None:
            found = [figure(r.summary.get("segments", {}).get("rtt"), stat) for r in runs]
            v = [x for x in found if x is not None]
            return float(np.median(v)) if v else None

        sent = sum(r.sent for r in runs)
        return {
            "verdict": None,
            "runs": len(runs),
            "rtt_p50_ns": over_runs("p50_ns"),
            "rtt_p99_ns": over_runs("p99_ns"),
            "loss_ratio": (sent - sum(r.received for r in runs)) / sent if sent else None,
        }

    def cell_brief(self, settings: dict[str, Any]) -> str:
        return ""


METHOD = RttMethod()
