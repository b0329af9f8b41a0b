"""The assess table for terminals (rich), one block per experiment."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from netassay.analysis.assess import Assessment
from netassay.analysis.latency import lines as latency_lines
from netassay.shared.doctor_reference import line as doctor_line
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
