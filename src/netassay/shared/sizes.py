"""The frame-size series of RFC 2544 (section 9.1): the same measurement at each of a
list of frame sizes, and its table (PDR and NDR, or the MRR, in Mpps and in Gbit/s at
layer 2 and layer 1 per size).

RFC 2544 counts a frame with its FCS: its 64-byte frame is netassay's ``--size 60``.
netassay-gen's frames carry a 22-byte stamp after the UDP header, so its smallest frame
is 64 bytes without the FCS (84 for IPv6, ``names.min_frame_bytes``): a size of the
series below that is sent at that smallest size, and the table says so. Rates at layer
2 count the frame with its FCS; at layer 1 also its preamble, start-of-frame delimiter
and inter-frame gap (20 bytes more, ``testbed.linerate``).

A series is found in a store without a tag: consecutive experiments of one kind whose
configurations differ only in their frame size (what ``--sizes`` stores, and what a
campaign with ``size`` as its only factor stores), a new series starting where a size
repeats.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.names import min_frame_bytes
from netassay.params import param
from netassay.shared.render import Section
from netassay.shared.series import Axis, Drawing, Finder, consecutive_runs, series_of
from netassay.shared.series import sections as drawn_sections
from netassay.store.db import Experiment, Store
from netassay.testbed.linerate import FCS_BYTES, IFG_BYTES, PREAMBLE_SFD_BYTES

RFC2544_FRAMES = (64, 128, 256, 512, 1024, 1280, 1518)  # with the FCS, as the RFC counts
MAX_SIZE = 1518  # netassay's --size, without the FCS
L1_EXTRA = PREAMBLE_SFD_BYTES + IFG_BYTES
METRICS = ("ndr_pps", "pdr_pps", "mrr_pps")  # what a series' table shows, when measured
# a size's verdict that leaves its bounds unsettled, and what it means for them
UNSETTLED = {
    "INCONCLUSIVE": "the curve could not be judged: their bounds are not established",
    "BAD": "the curve's PDR is not to be trusted (PASTRAMI's verdict)",
}


@dataclass(frozen=True)
class SizesFlag:
    """The one flag of a frame-size series (sweep, search and flood take it)."""

    sizes: str | None = param(
        "--sizes",
        "A frame-size series, one result per size: 'rfc2544' (64, 128, 256, 512, 1024, "
        "1280, 1518 with the FCS, as RFC 2544 counts) or sizes without the FCS as --size "
        "counts, e.g. 64,512,1514; its table ends the run.",
        default=None, campaign=False, metavar="SIZES",
    )  # fmt: skip


def parse_sizes(text: str, ip_version: int) -> list[int]:
    """The series' frame sizes as ``--size`` counts them (without the FCS); UsageError
    naming the size for one that cannot be sent."""
    smallest = min_frame_bytes(ip_version)
    if text.strip().lower() == "rfc2544":
        out: list[int] = []
        for frame in RFC2544_FRAMES:
            size = max(frame - FCS_BYTES, smallest)
            if size not in out:
                out.append(size)
        return out
    sizes = []
    for part in (p.strip() for p in text.split(",")):
        if not part.isascii() or not part.isdigit():  # '²' is a digit int() cannot read
            raise UsageError(
                f"--sizes {text}: '{part}' is not a frame size",
                "give 'rfc2544' or sizes in bytes, e.g. 64,512,1514",
                "fix the list",
            )
        size = int(part)
        if not smallest <= size <= MAX_SIZE:
            raise UsageError(
                f"--sizes {text}: {size} bytes cannot be sent over IPv{ip_version}",
                f"netassay's frames are {smallest}..{MAX_SIZE} bytes without the FCS"
                " (its 22-byte stamp follows the UDP header)",
                f"give sizes from {smallest} to {MAX_SIZE}",
            )
        if size in sizes:
            raise UsageError(f"--sizes {text}: {size} is given twice", "", "give it once")
        sizes.append(size)
    return sizes


def layer_rates(pps: float | None, size_bytes: int) -> dict[str, float | None]:
    """A frame rate of frames of ``size_bytes`` (without the FCS) in Mpps and in Gbit/s
    at layer 2 (the frame with its FCS) and at layer 1 (with preamble and gap)."""
    if pps is None:
        return {"mpps": None, "gbps_l2": None, "gbps_l1": None}
    frame = size_bytes + FCS_BYTES
    return {
        "mpps": pps / 1e6,
        "gbps_l2": pps * frame * 8 / 1e9,
        "gbps_l1": pps * (frame + L1_EXTRA) * 8 / 1e9,
    }


@dataclass
class SizeSeries:
    """One frame-size series: a kind's experiments in order of size, each with the
    rates its method measured (``METRICS``)."""

    kind: str
    label: str
    ip_version: int
    points: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"series": "frame sizes", "kind": self.kind, "label": self.label,
                "ip_version": self.ip_version, "sizes": self.points}  # fmt: skip


def point(exp: Experiment, size: int, figures: dict[str, Any]) -> dict[str, Any]:
    """One size of a series: its experiment, the frame with and without its FCS, its
    verdict (None: its method judges none), and each measured rate in frames/s, Mpps and
    Gbit/s at L2 and L1, with ``<name>_at_least``: True when the rate is only a lower
    bound (the highest load tested met the goal; where the SUT's ends was not found)."""
    out: dict[str, Any] = {
        "experiment_id": exp.id, "size_bytes": size, "frame_bytes": size + FCS_BYTES,
        "verdict": figures.get("verdict"),
    }  # fmt: skip
    for m in METRICS:
        if m in figures:
            name = m.removesuffix("_pps")
            out[m] = figures[m]
            out[f"{name}_at_least"] = bool(figures.get(f"{name}_at_least"))
            out.update({f"{name}_{k}": v for k, v in layer_rates(figures[m], size).items()})
    return out


def _size_of(exp: Experiment) -> int | None:
    size = (exp.config.get("testbed") or {}).get("size_bytes")
    return int(size) if isinstance(size, int | float) else None


def _key(exp: Experiment) -> str:
    """What the experiments of one series share: all of the configuration but the
    frame size and the testbed's name (a default label names the size: not compared)."""
    cfg = dict(exp.config)
    cfg["testbed"] = {k: v for k, v in (cfg.get("testbed") or {}).items() if k != "size_bytes"}
    cfg.pop("testbed_name", None)
    return json.dumps([exp.kind, cfg], sort_keys=True, default=str)


def _runs(experiments: list[Experiment]) -> Iterator[list[Experiment]]:
    """Consecutive experiments with one key and distinct sizes; a new run where the
    key changes or a size repeats."""
    return consecutive_runs(experiments, _key, _size_of)


def _new(run: list[Experiment]) -> SizeSeries:
    tb = run[0].config.get("testbed") or {}
    label = run[0].label if len({e.label for e in run}) == 1 else ""
    return SizeSeries(run[0].kind, label, int(tb.get("ip_version", 4)))


AXIS = Axis(value=_size_of, new=_new, point=point)


def series_in(
    store: Store, cfg: AnalysisConfig, of_kind: Finder, since_id: int = 0
) -> list[SizeSeries]:
    """Every frame-size series of the store (of two sizes or more), oldest first; only
    experiments after ``since_id`` with ``since_id``."""
    sized = [e for e in store.experiments() if e.id > since_id and _size_of(e) is not None]
    return series_of(AXIS, _runs(sized), store, cfg, of_kind)


def _fmt(x: float | None, digits: int, at_least: bool = False) -> str:
    if x is None:
        return "-"
    return f"{'>=' if at_least else ''}{x:.{digits}f}"


def unsettled(s: SizeSeries) -> list[dict[str, Any]]:
    """The sizes whose verdict is not a pass: their bounds were not established."""
    return [p for p in s.points if p.get("verdict") in UNSETTLED]


def table_text(s: SizeSeries) -> str:
    """The RFC 2544 table of one series: a row per frame size, each measured rate in
    Mpps and in Gbit/s at L2 and L1 ('>=' before a rate that is only at least that),
    and each size's verdict; notes under it say what the marks mean."""
    metrics = [m.removesuffix("_pps") for m in METRICS if any(m in p for p in s.points)]
    judged = any(p.get("verdict") is not None for p in s.points)
    head = (
        f"{'frame':>7} {'size':>6}"
        + "".join(f" {n.upper() + ' Mpps':>10} {'Gb/s L2':>9} {'Gb/s L1':>9}" for n in metrics)
        + ("  verdict" if judged else "")
    )
    lines = [
        f"frame-size series ({s.kind}{', ' + s.label if s.label else ''}, IPv{s.ip_version}):"
        " frame with its FCS as RFC 2544 counts, size without it as --size counts",
        head,
    ]
    for p in s.points:
        row = f"{p['frame_bytes']:>7} {p['size_bytes']:>6}"
        for n in metrics:
            least = bool(p.get(f"{n}_at_least"))
            row += f" {_fmt(p.get(f'{n}_mpps'), 4, least):>10}"
            row += f" {_fmt(p.get(f'{n}_gbps_l2'), 3, least):>9}"
            row += f" {_fmt(p.get(f'{n}_gbps_l1'), 3, least):>9}"
        if judged:
            row += f"  {p.get('verdict') or '-'}"
        lines.append(row)
    lines += notes(s, metrics)
    return "\n".join(lines)


def notes(s: SizeSeries, metrics: list[str]) -> list[str]:
    """What the table's marks mean, said under it when they appear."""
    out = []
    if (
        s.points
        and s.points[0]["size_bytes"] == min_frame_bytes(s.ip_version)
        and (s.points[0]["frame_bytes"] > 64)
    ):
        out.append(
            f"  {s.points[0]['frame_bytes']} B: RFC 2544's 64-byte frame is too small for"
            f" netassay's stamp over IPv{s.ip_version}; its smallest frame stands in"
        )
    if any(p.get(f"{n}_at_least") for p in s.points for n in metrics):
        out.append(
            "  >= : at least this rate: the highest load tested met the goal, no load above it"
            " was tested (or the next one was not measured); the SUT's own bound was not"
            " found: widen the loads"
        )
    for verdict, meaning in UNSETTLED.items():
        these = [p for p in s.points if p.get("verdict") == verdict]
        if these:
            sizes = ", ".join(f"{p['frame_bytes']} B" for p in these)
            out.append(
                f"  {verdict}: {len(these)} of {len(s.points)} sizes ({sizes}): {meaning}"
                " ('netassay assess' says why for each)"
            )
    return out


# its section: "RFC 2544 frame sizes: sweep, label", figures/sizes_sweep_label.png
DRAWING: Drawing[SizeSeries] = Drawing(
    "netassay.shared.size_figures:plot_series", "sizes", lambda s: "RFC 2544 frame sizes: ",
    table_text,
)  # fmt: skip


def sections(
    store: Store, out: Path, cfg: AnalysisConfig, used: set[str], of_kind: Finder
) -> list[Section]:
    """One section per frame-size series of the store: its table and its figure (a job
    of ``size_figures.plot_series``)."""
    return drawn_sections(DRAWING, series_in(store, cfg, of_kind), out, used)
