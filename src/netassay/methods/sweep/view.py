"""The assess table for terminals (rich), one block per experiment."""

from __future__ import annotations

import json
import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from netassay.analysis.assess import Assessment
from netassay.analysis.latency import lines as latency_lines
from netassay.shared import dataplane_counters as dataplane
from netassay.shared import lab
from netassay.shared.directions import (
    DIRECTIONS,
    direction_rows,
    directions_json,
    directions_lines,
)
from netassay.shared.doctor_reference import line as doctor_line
from netassay.shared.imix_sizes import mix_json, mix_lines, mix_rows
from netassay.shared.rates import rates_json, rates_lines
from netassay.shared.sweep_latency import direction_latency_rows, latency_rows
from netassay.shared.sweep_run import Sweep
from netassay.store.db import Store
from netassay.units import fmt_rate

VERDICT_STYLE = {"GOOD": "bold green", "BAD": "bold red", "INCONCLUSIVE": "bold yellow"}


def _g(x: float, fmt: str = ".3e") -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, fmt)


def metadata_line(a: Assessment) -> str:
    keys = ("class", "environment", "kernel", "testbed", "pinning", "ring", "sut", "site",
            "rx_mode")  # fmt: skip
    parts = [f"{k}={a.metadata[k]}" for k in keys if a.metadata.get(k) not in (None, "")]
    checked = doctor_line(a.metadata.get("doctor"))  # the host's newest doctor run, if any
    sender = a.metadata.get("sender")  # how the generator sent (testbed.receive.technique)
    return (
        " ".join(parts)
        + (f"; sender: {sender}" if sender else "")
        + (f"; {checked}" if checked else "")
    )


def render(a: Assessment, console: Console) -> None:
    t = a.table
    s = a.saturation
    ks = ",".join(map(str, a.k_values))
    dur = f"{a.duration_s:g} s" if a.duration_s else "?"
    title = f"{a.label}  [dim]K={ks} T={dur} mode={a.mode}[/dim]"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in ("#", "load/s", "K", "excl", "PLR", "std", "UCL95", "ΔUCL95", "TIR", "mark"):
        table.add_column(name, justify="right" if name != "mark" else "left")
    for i in range(len(t)):
        mark = []
        if i == a.pdr.index:
            mark.append("PDR")
        if i == s.past_pdr_index:
            mark.append("past-PDR")
        if i == s.potential_saturation_index:
            mark.append("potential")
        if i == s.saturation_index:
            mark.append("SAT")
        if i in s.exits:
            mark.append("left-sat")
        if t.reason[i]:  # why trials were left out, or why the load has no number
            mark.append(t.reason[i] if t.k[i] else f"GAP: {t.reason[i]}")
        table.add_row(
            str(i),
            fmt_rate(t.rate_pps[i]).replace("pps", "").replace(" ", ""),
            str(int(t.k[i])),
            str(int(t.excluded[i])) if t.excluded[i] else "",
            _g(t.plr[i], ".2e"),
            _g(t.plr_std[i], ".2e"),
            _g(t.ucl95[i], ".2e"),
            _g(t.delta_ucl95[i], ".3g"),
            _g(a.tir_used[i], ".3f"),
            ", ".join(mark),
        )
    console.print(table)
    meta = metadata_line(a)
    if meta:
        console.print(f"  [dim]{meta}[/dim]")
    if a.metadata.get("schedule"):  # what the generator's trials actually sent
        console.print(f"  [dim]schedule: {a.metadata['schedule']}[/dim]", highlight=False)
    verdict = Text(f"  verdict: {a.verdict}", style=VERDICT_STYLE.get(a.verdict, ""))
    console.print(verdict, Text(f"- {s.reason}"))
    console.print(f"  {bounds_line(a)}")
    if a.latency:  # sweep --latency
        for line in latency_lines(list(a.latency)):
            console.print(f"  {line}", highlight=False)
    for w in [*s.warnings, *a.flags]:
        console.print(f"  [yellow]note:[/yellow] {w}", highlight=False)
    console.print()


# the table's marks, said once under every table a command printed
LEGEND = (
    "marks: PDR = highest load meeting the PDR goal; past-PDR = first load above it; "
    "potential = potential saturation point; SAT = saturation entered and held; "
    "GAP = no usable trial (TIR and the bounds stop there)"
)


def bounds_line(a: Assessment) -> str:
    """PDR@X% and NDR as measured bounds, in words."""
    pdr_name = f"PDR@{a.params['pdr'] * 100:g}%"
    return f"{a.pdr.describe(pdr_name)};  {a.ndr.describe('NDR')}"


def end_lines(a: Assessment) -> list[str]:
    """What a sweep says when it ends: its verdict and why, its bounds and any above a
    cap netassay set ('assess' shows the rest)."""
    caps = [f"note: {x.line()}" for x in a.above_cap]  # a bound above a cap netassay set
    return [f"verdict: {a.verdict} - {a.saturation.reason}", bounds_line(a), *caps]


def make_console() -> Console:
    """A console at least 110 columns wide, so the table never wraps in a pipe."""
    probe = Console()
    if probe.is_terminal:
        return Console(highlight=False)
    # piped: a line is never cut (grep finds a verdict's reason whole)
    return Console(highlight=False, width=max(probe.width, 110), soft_wrap=True)


def ended(sw: Sweep, a: Assessment, view: str) -> tuple[str, list[str]]:
    """What a sweep says when it ends, its assessment's JSON (``view``) and its verdict
    and bounds (``end_lines``) with what its store holds beside them: the latency per
    load, the loads as written, where chosen loads came from, the counts per frame size
    and per direction, a data plane's own counters. The JSON text (``view`` itself
    when nothing is added) and the lines."""
    lines = end_lines(a)
    doc = json.loads(view)
    assert sw.experiment_id is not None
    with Store(sw.db, readonly=True) as store:
        if sw.latency:  # the latency per load after the assessment (JSON: ``latency``)
            rows = latency_rows(store, sw.experiment_id)
            doc["latency"] = [r.to_json() for r in rows]
            lines += latency_lines(rows)
        mix, loads = mix_rows(store, sw.experiment_id)
        both = direction_rows(store, sw.experiment_id)
        each_way = {
            d: direction_latency_rows(store, sw.experiment_id, d) for d in DIRECTIONS
        } if both and sw.latency else {}  # fmt: skip
        rates = store.experiment(sw.experiment_id).metadata.get("rates")
        own = dataplane.stored(store, sw.experiment_id)  # a data plane's own counters, per load
    if rates:  # loads written in bit/s or as shares (JSON: ``rates``)
        doc["rates"] = rates_json(rates)
        lines += rates_lines(rates)
    if sw.auto is not None:  # no loads given: where they came from (JSON: ``auto_loads``)
        doc["auto_loads"] = sw.auto
        lines.append(lab.auto_line(sw.auto))
    if mix is not None:  # --imix: the counts per size (JSON: ``imix``)
        doc["imix"] = mix_json(mix, loads)
        lines += mix_lines(mix, loads)
    if both:  # --bidirectional: each direction's counts (JSON: ``bidirectional``)
        doc["bidirectional"] = directions_json(both)
        lines += directions_lines(doc["bidirectional"])
        if sw.latency:  # and each direction's latency (JSON: ``bidirectional.latency``)
            doc["bidirectional"]["latency"] = {d: [r.to_json() for r in rows]
                                               for d, rows in each_way.items()}  # fmt: skip
            for d, rows in each_way.items():
                lines += [f"{d} direction (loads per direction):", *latency_lines(rows)]
    if own is not None:  # --sut ovs, testpmd, l3fwd (JSON: ``dataplane``)
        doc["dataplane"] = own
        lines += dataplane.json_lines(own)
    text = view if doc.keys() == {*json.loads(view)} else json.dumps(doc)
    return text, lines
