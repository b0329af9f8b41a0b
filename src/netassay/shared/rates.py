"""Loads written in bit/s at a stated layer, or as shares of the path's line rate.

A load is written three ways, each token on its own:

- frames/s, as always: ``200k``, ``1.5M``, ``250000`` (``units.parse_rate``; unchanged);
- bit/s: a number with an optional k/M/G (k = 1000) and a bit unit, ``bps``, ``bit`` or
  ``bit/s``: ``500Mbps``, ``1Gbit``, ``2.5Gbit/s``. A bare ``1G`` stays 10^9 frames/s, as
  it always was. It is converted to frames/s with the frame size (``--size``, or the
  mean frame of ``--imix``) at ``--layer``: ``l1`` (default) counts each frame with its
  FCS, preamble and start-of-frame delimiter and inter-frame gap (24 bytes beyond
  ``--size``), as a port's speed is stated, so that ``10Gbps`` on a 10 Gb/s port is its
  line rate; ``l2`` counts the frame with its FCS (4 bytes beyond ``--size``);
- a share of the line rate: ``50%``, ``10%:100%:10%`` (0 < share <= 100%). The line rate
  is a port's speed (layer 1): an external testbed's ports report it; the embedded
  testbed's veths report none, so ``--line-rate 10G`` states the one the run stands
  for, and a share without a known line rate is refused.

Each load is rounded down to whole frames/s (100% never exceeds the line rate): 1 Gbit/s
at L1 in 64-byte frames with their FCS (``--size 60``, 84 bytes at L1) is 1,488,095
frames/s. A range ``START:STOP:STEP`` keeps one unit and is stepped in it. Stored
experiments keep their loads in frames/s as before, and what was written beside them in
their metadata (``rates``), which the views show in frames/s and bit/s at the layer.

The tokens' syntax, ``--layer`` and ``--line-rate`` are ``netassay.loads`` (what a config
file's and a campaign file's checks need, no frame known); this module converts: a
command's loads (``resolved``, a config file's naming its line) and a campaign cell's
with the cell's own knobs (``in_frames``).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from netassay import names
from netassay.config import Config, TestbedConfig, with_frame_size
from netassay.errors import InputError, UsageError
from netassay.imix import mean_frame_bytes, parse_imix, spec
from netassay.loads import parse_layer, parse_line_rate, tokens, written
from netassay.params import Param, declared, request_from
from netassay.shared import lab
from netassay.shared.lab import Taken
from netassay.testbed.bed import config_from_state
from netassay.testbed.linerate import FCS_BYTES, IFG_BYTES, PREAMBLE_SFD_BYTES
from netassay.traffic.pcap import describe
from netassay.units import fmt_rate

L1_EXTRA = PREAMBLE_SFD_BYTES + IFG_BYTES


@dataclass(frozen=True)
class Frames:
    """What a load in bit/s is converted with: the (mean) frame without its FCS, the
    layer, the line rate (bit/s at L1; None: unknown) and where it came from."""

    frame_bytes: float
    layer: int = 1
    frames: str = ""  # '64-byte frames', 'imix 64:7,590:4,1514:1 (mean 355.8 B)'
    line_bps: float | None = None
    line_from: str | None = None

    def bits(self, layer: int | None = None) -> float:
        """Bits a (mean) frame takes at ``layer`` (default: this one's)."""
        extra = FCS_BYTES + (L1_EXTRA if (layer or self.layer) == 1 else 0)
        return 8 * (self.frame_bytes + extra)


def to_pps(kind: str, value: float, fr: Frames, what: str, text: str) -> float:
    """A value of ``kind`` in frames/s, rounded down to whole frames."""
    if kind == "pps":
        return value
    if kind == "bit":
        pps = value / fr.bits()
    else:
        if fr.line_bps is None:
            pdr = " (a share of the PDR is written N%pdr)" if what == "--rate" else ""
            raise UsageError(
                f"{what} {text}: the line rate is unknown",
                "a share needs the path's line rate and no port reports one (veth)",
                f"give --line-rate 10G (the line the run stands for), or a rate like 500Mbps{pdr}",
            )  # fmt: skip
        pps = value * fr.line_bps / fr.bits(1)
    out = float(math.floor(pps + 1e-6))
    if out < 1:
        raise UsageError(f"{what} {text} is below 1 frame/s", f"with {fr.frames}",
                         "give a higher rate")  # fmt: skip
    return out


def loads(text: str, fr: Frames, what: str = "--rates") -> list[float]:
    """A load list in frames/s: 'START:STOP:STEP' (one unit, inclusive) or 'a,b,c'."""
    text = str(text).strip()
    out = [to_pps(kind, x, fr, what, t) for kind, x, t in tokens(text, what)]
    if any(b <= a for a, b in itertools.pairwise(out)):
        shown = ", ".join(f"{r:.0f}" for r in out)
        raise UsageError(
            f"bad {what} '{text}'",
            f"the loads in frames/s ({shown}) must increase strictly with {fr.frames}",
            "sort them and drop repeats",
        )
    if fr.line_bps is not None and out[-1] > fr.line_bps / fr.bits(1) + 1e-6:
        top = fr.line_bps / fr.bits(1)
        raise UsageError(f"{what} {text} is above the line rate",
                         f"{fmt_bps(fr.line_bps)} ({fr.line_from}) carries at most "
                         f"{top:,.0f} frames/s of {fr.frames}",
                         f"keep loads at or below {fmt_rate(top)} (100%)")  # fmt: skip
    return out


def fmt_bps(bps: float) -> str:
    for div, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if bps >= div:
            return f"{bps / div:.7g} {unit}"
    return f"{bps:.7g} bit/s"


# -- the command's side: where the frame size and the line rate come from ----------------
def frames_of(options: Taken, layer: int, line_bps: float | None) -> Frames:
    """The frame size and line rate of the testbed the run takes (``--testbed``'s state,
    a testbed of that name that is up, else the flags and the config file)."""
    cfg = options.config or Config()
    name = options.testbed or options.name or names.DEFAULT_NAME
    state = options.seen.require(name) if options.testbed else options.seen.read(name)
    if options.testbed and state is not None:
        tb = config_from_state(state)
    else:
        tb = lab.running_config(name, cfg.testbed, options)
    port = ((state or {}).get("line_rate") or {}) if options.testbed else {}
    speed, line_from = port.get("speed_mbps"), None
    if speed:
        if line_bps is not None:
            raise UsageError(
                f"--line-rate with testbed '{name}'",
                f"its port {port.get('limited_by')} reports {speed} Mb/s: that is its line rate",
                "drop --line-rate",
            )  # fmt: skip
        line_bps, line_from = float(speed) * 1e6, f"port {port.get('limited_by')}"
    return frames_in(tb, layer, line_bps, line_from)


def frames_in(tb: Any, layer: int, line_bps: float | None, line_from: str | None = None) -> Frames:
    """The (mean) frame of testbed knobs ``tb``: its size, or its mix's mean frame."""
    tb = with_frame_size(tb)
    if line_bps is not None and line_from is None:
        line_from = "--line-rate"
    pcap = getattr(tb, "pcap", None)
    if pcap:
        c = describe(pcap, tb.ip_version)
        named = f"pcap {os.path.basename(pcap)} (mean {c.mean_bytes:.1f} B)"
        return Frames(c.mean_bytes, layer, named, line_bps, line_from)
    imix = getattr(tb, "imix", None)
    if imix:
        mix = parse_imix(imix, tb.ip_version)
        mean, named = mean_frame_bytes(mix), spec(mix)
        return Frames(mean, layer, f"imix {named} (mean {mean:.1f} B)", line_bps, line_from)
    size = float(tb.size_bytes)
    return Frames(size, layer, f"{tb.size_bytes}-byte frames", line_bps, line_from)


class LoadError(UsageError):
    """A load that cannot be converted, with its key (a campaign file names its line)."""

    def __init__(self, what: str, why: str = "", todo: str = "", key: str = "") -> None:
        super().__init__(what, why, todo)
        self.key = key


@contextmanager
def _at(key: str, where: str | None) -> Iterator[None]:
    """A load's error naming its key, and the file's line it was written on (``where``;
    InputError, as a config file's other errors)."""
    try:
        yield
    except UsageError as exc:
        if where is not None:
            raise InputError(f"{where}: {exc.what}", exc.why, exc.todo) from exc
        raise LoadError(exc.what, exc.why, exc.todo, key) from exc


def resolve(
    given: dict[str, Any], options: Taken, fields: dict[str, str],
    lists: tuple[str, ...] = (), origins: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:  # fmt: skip
    """``given`` with its loads written in bit/s or as shares (``fields``: key -> flag;
    ``lists``: the keys that hold a list of loads) replaced by frames/s, and what was
    written (None: every load in frames/s, nothing replaced). UsageError, one line, for
    what cannot be converted, before anything is built. ``origins``: the keys a config
    file gave, each 'file:line', which its errors name (InputError); a layer or line
    rate of the file is its default for loads so written, not refused without them."""
    origins = origins or {}
    mine = {k: str(given[k]) for k in fields if written(given.get(k))}
    if not mine:
        unread(given, set(origins))
        return given, None
    if options.resume:
        raise UsageError("a rate in bit/s or a share with --resume",
                         "a resumed run keeps its own loads", "drop them")  # fmt: skip
    layer, line_bps = reading(given, origins)
    with _at("line_rate", origins.get("line_rate") if given.get("line_rate") else None):
        fr = frames_of(options, layer, line_bps)
    return converted(given, mine, fr, fields, lists, origins)


def unread(given: dict[str, Any], quiet: Collection[str] = ()) -> None:
    """Refuse a layer or line rate given beside loads all in frames/s (but ``quiet``'s)."""
    for key, flag in (("layer", "--layer"), ("line_rate", "--line-rate")):
        if given.get(key) is not None and key not in quiet:
            raise LoadError(
                f"{flag} with loads in frames/s",
                f"{flag} reads a load written in bit/s (500Mbps) or as a share (50%)",
                f"write the load so, or drop {flag}", key,
            )  # fmt: skip


def reading(given: dict[str, Any], origins: dict[str, str]) -> tuple[int, float | None]:
    """The layer and line rate (bit/s; None: not given) loads are read at."""
    layer_text, line_text = given.get("layer"), given.get("line_rate")
    with _at("layer", origins.get("layer")):
        layer = 1 if layer_text is None else parse_layer(layer_text)
    with _at("line_rate", origins.get("line_rate")):
        line_bps = None if line_text is None else parse_line_rate(line_text)
    return layer, line_bps


def converted(
    given: dict[str, Any], mine: dict[str, str], fr: Frames, fields: dict[str, str],
    lists: tuple[str, ...], origins: dict[str, str],
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """``given`` with the loads of ``mine`` in frames/s of ``fr``, and its record."""
    out, pps = dict(given), {}
    for key, text in mine.items():
        with _at(key, origins.get(key)):
            rates = loads(text, fr, fields[key])
            if key not in lists and len(rates) != 1:
                raise UsageError(f"bad {fields[key]} '{text}'", "it takes one load",
                                 "give e.g. 500Mbps or 50%")  # fmt: skip
        pps[fields[key]] = rates
        out[key] = ",".join(f"{r:.0f}" for r in rates)
    record = {
        "written": {fields[k]: t for k, t in mine.items()}, "pps": pps,
        "layer": f"l{fr.layer}", "frames": fr.frames, "frame_bytes": fr.frame_bytes,
        "bits_per_frame": {"l1": fr.bits(1), "l2": fr.bits(2)},
        "line_rate_bps": fr.line_bps, "line_rate_from": fr.line_from,
    }  # fmt: skip
    return out, record


def resolved(
    given: dict[str, Any], options: Taken, cls: type, section: str, flags: Collection[str]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A command's ``resolve``: the loads ``cls`` declares (``Param.load``) in frames/s,
    and what was written (for ``RunOptions.rates``); a key of the config file's [``section``]
    that no flag (``flags``: the keys given) overrode names its line."""
    cfg = options.config
    origins = {
        k: cfg.where(section, k) for k in cfg.section(section) if k not in flags
    } if cfg is not None else {}  # fmt: skip
    ps = load_params(cls)
    fields = {k: p.flag for k, p in ps.items()}
    lists = tuple(k for k, p in ps.items() if p.load == "list")
    return resolve(given, options, fields, lists, origins)


# -- a campaign cell's loads: converted with the cell's own knobs ---------------------
def load_params(cls: type) -> dict[str, Param]:
    """A request's loads that may be written in bit/s or as shares, by key."""
    return {p.name: p for _, p in declared(cls) if p.load}


def in_frames(cls: type, settings: dict[str, Any]) -> dict[str, Any]:
    """A campaign cell's settings (keys as its file writes them) with its loads in
    frames/s, converted with the cell's own frame size or mix, layer and line rate, as
    its command will convert them; UsageError as the command would say it."""
    ps = load_params(cls)
    if not ps:  # a method whose loads are its own (an accept's contract, an rtt's probes)
        return settings
    mine = {k: ",".join(map(str, v)) if isinstance(v, list) else str(v)
            for k, v in settings.items() if k in ps and written(v)}  # fmt: skip
    if not mine:
        unread(settings)
        return settings
    layer, line_bps = reading(settings, {})
    knobs = request_from(TestbedConfig, settings)
    fr = frames_in(knobs, layer, line_bps)
    fields = {k: p.flag for k, p in ps.items()}
    lists = tuple(k for k, p in ps.items() if p.load == "list")
    return converted(settings, mine, fr, fields, lists, {})[0]


# -- the views' side: a stored record in words and as JSON ------------------------------
def rates_json(record: dict[str, Any]) -> dict[str, Any]:
    """The stored record with each load in frames/s and bit/s at L1 and L2 and at its
    layer (``rate_bps``)."""
    bits = record["bits_per_frame"]
    return {
        **record,
        "loads": {
            flag: [
                {
                    "rate_pps": r, "rate_bps": r * bits[record["layer"]],
                    "rate_bps_l1": r * bits["l1"], "rate_bps_l2": r * bits["l2"],
                    **({"line_rate_share": r * bits["l1"] / record["line_rate_bps"]}
                       if record.get("line_rate_bps") else {}),
                }
                for r in rates
            ]
            for flag, rates in record["pps"].items()
        },
    }  # fmt: skip


def rates_lines(record: dict[str, Any]) -> list[str]:
    """What was written and what it became: frames/s and bit/s at the layer."""
    doc, layer = rates_json(record), record["layer"].upper()
    bits = record["bits_per_frame"][record["layer"]]
    line = record.get("line_rate_bps")
    of = f" of {fmt_bps(line)} ({record['line_rate_from']}) at L1" if line else ""
    out = []
    for flag, text in record["written"].items():
        shown = ", ".join(
            f"{d['rate_pps']:,.0f} frames/s = {fmt_bps(d['rate_bps'])}" for d in doc["loads"][flag]
        )
        out.append(
            f"{flag} {text}{of}, {record['frames']} ({bits / 8:g} B each at {layer}): "
            f"{shown} at {layer}"
        )
    return out
