"""Scale series: the same measurement at each of a list of FIB sizes (``--routes``),
rule counts (``--nft-rules``, ``--ovs-rules``) or flow counts (``--flows``), one result
per value, and the series' table and curve (PDR and NDR, or the MRR, against the
scale).

``--routes 1,1k,100k,1M`` on a sweep, search or flood runs the command once per value,
on a testbed built for that value (``shared.series_plan``, ``cli.series``), each result
stored as it ends. A series is found in a store without a tag, as a frame-size series is
(``shared.sizes``): consecutive experiments of one kind whose configurations differ
only in that one knob, a new series starting where a value repeats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.shared.render import Section
from netassay.shared.series import Axis, Drawing, Finder, consecutive_runs, series_of
from netassay.shared.series import sections as drawn_sections
from netassay.store.db import Experiment, Store
from netassay.units import parse_whole

# a knob of the testbed (its TestbedConfig field), its flag and what it counts
KNOBS: dict[str, tuple[str, str]] = {
    "routes": ("--routes", "FIB routes"),
    "nft_rules": ("--nft-rules", "nft rules"),
    "flows": ("--flows", "flows"),
    "ovs_rules": ("--ovs-rules", "OpenFlow rules"),
}
METRICS = ("ndr_pps", "pdr_pps", "mrr_pps")  # what a series' table shows, when measured


def is_list(text: Any) -> bool:
    """A knob's value given as a list (a series), not one value."""
    return isinstance(text, str) and "," in text


def parse_list(text: str, flag: str) -> list[int]:
    """'1,1k,100k,1M' as whole numbers (k = 1000), each once; UsageError naming the
    value that is not one."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        try:
            n = parse_whole(part, flag)
        except UsageError as exc:
            raise UsageError(
                f"{flag} {text}: '{part}' is not a count",
                "give whole numbers, 1k = 1000, e.g. 1,1k,100k,1M",
                "fix the list",
            ) from exc
        if n in out:
            raise UsageError(f"{flag} {text}: {n:,} is given twice", "", "give it once")
        out.append(n)
    return out


@dataclass
class ScaleSeries:
    """One scale series: a kind's experiments in order of the knob's value, each with
    the rates its method measured (``METRICS``)."""

    kind: str
    knob: str
    label: str
    ip_version: int
    points: list[dict[str, Any]] = field(default_factory=list)

    @property
    def what(self) -> str:
        return KNOBS[self.knob][1]

    def as_json(self) -> dict[str, Any]:
        return {"series": self.what, "knob": self.knob, "kind": self.kind, "label": self.label,
                "ip_version": self.ip_version, "points": self.points}  # fmt: skip


def _value(exp: Experiment, knob: str) -> int | None:
    v = (exp.config.get("testbed") or {}).get(knob)
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


# loads a run chose itself from what it measured (a sweep's from the MRR, a search's
# generator reach): they differ from one value of a series to the next
CHOSEN = ("rates_pps", "auto_loads")
CHOSEN_SEARCH = ("max_load_pps", "generator_reach_pps")


def _key(exp: Experiment, knob: str) -> str:
    """What the experiments of one series share: all of the configuration but the
    knob, the testbed's name and the loads the runs chose themselves."""
    cfg = {k: v for k, v in exp.config.items() if k not in (*CHOSEN, "testbed_name")}
    cfg["testbed"] = {k: v for k, v in (cfg.get("testbed") or {}).items() if k != knob}
    if isinstance(cfg.get("search"), dict):
        cfg["search"] = {k: v for k, v in cfg["search"].items() if k not in CHOSEN_SEARCH}
    return json.dumps([exp.kind, cfg], sort_keys=True, default=str)


def _runs(experiments: list[Experiment], knob: str) -> Iterator[list[Experiment]]:
    return consecutive_runs(experiments, lambda e: _key(e, knob), lambda e: _value(e, knob))


def series_in(
    store: Store, cfg: AnalysisConfig, of_kind: Finder, since_id: int = 0
) -> list[ScaleSeries]:
    """Every scale series of the store (two values or more of one knob), oldest first;
    only experiments after ``since_id`` with ``since_id``."""
    exps = [e for e in store.experiments() if e.id > since_id]
    found = []
    kinds = list(dict.fromkeys(e.kind for e in exps))
    for knob in KNOBS:
        valued = [e for e in exps if _value(e, knob) is not None]
        # each kind on its own: a search's verify sweep comes between its searches
        runs = [r for kind in kinds for r in _runs([e for e in valued if e.kind == kind], knob)]
        found += series_of(_axis(knob), runs, store, cfg, of_kind)
    return found


def _axis(knob: str) -> Axis[ScaleSeries]:
    """A scale series' value: the knob's count."""

    def new(run: list[Experiment]) -> ScaleSeries:
        tb = run[0].config.get("testbed") or {}
        return ScaleSeries(run[0].kind, knob, _label(run, knob), int(tb.get("ip_version", 4)))

    def point(exp: Experiment, value: int, figures: dict[str, Any]) -> dict[str, Any]:
        return {"experiment_id": exp.id, "value": value,
                **{k: figures[k] for k in METRICS if k in figures}}  # fmt: skip

    return Axis(value=lambda e: _value(e, knob), new=new, point=point)


def _label(run: list[Experiment], knob: str) -> str:
    """The series' label: its experiments' labels where they are one, else the first's
    with the knob's own words ('100k routes') left out."""
    labels = {e.label for e in run}
    if len(labels) == 1:
        return run[0].label
    if knob == "ovs_rules":  # the count is the last knob of 'ovs(afxdp,normal,10000)'
        return re.sub(r"\b(ovs\([^)]*),\d+\)", r"\1)", run[0].label)
    word = {"routes": "routes", "nft_rules": "rules", "flows": "flows"}[knob]
    parts = run[0].label.split()
    keep = [w for i, w in enumerate(parts) if w != word and parts[i + 1 : i + 2] != [word]]
    return " ".join(keep)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e6:.4f}"


def table_text(s: ScaleSeries) -> str:
    """The series' table: a row per value, each measured rate in Mpps and against the
    series' first value."""
    metrics = [m for m in METRICS if any(m in p for p in s.points)]
    flag = KNOBS[s.knob][0]
    head = f"{flag:>12}" + "".join(
        f" {m.removesuffix('_pps').upper() + ' Mpps':>10} {'vs first':>8}" for m in metrics
    )
    lines = [
        f"scale series: {s.what} ({s.kind}{', ' + s.label if s.label else ''}, IPv{s.ip_version})",
        head,
    ]
    first = s.points[0] if s.points else {}
    for p in s.points:
        row = f"{p['value']:>12,}"
        for m in metrics:
            base = first.get(m)
            ratio = f"{p[m] / base:.3f}" if p.get(m) is not None and base else "-"
            row += f" {_fmt(p.get(m)):>10} {ratio:>8}"
        lines.append(row)
    return "\n".join(lines)


# its section: "Scale: FIB routes, sweep, label", figures/scale_routes_sweep_label.png
DRAWING: Drawing[ScaleSeries] = Drawing(
    "netassay.shared.scale_figures:plot_series", "scale", lambda s: f"Scale: {s.what}, ",
    table_text, words=lambda s: f"{s.knob} ",
)  # fmt: skip


def sections(
    store: Store, out: Path, cfg: AnalysisConfig, used: set[str], of_kind: Finder
) -> list[Section]:
    """One section per scale series of the store: its table and its curve (a job of
    ``scale_figures.plot_series``)."""
    return drawn_sections(DRAWING, series_in(store, cfg, of_kind), out, used)
