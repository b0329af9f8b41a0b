"""Loads written in bit/s at a stated layer, or as shares of the path's line rate (issue 22).

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
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from netassay import names as N
from netassay.config import Config, with_frame_size
from netassay.errors import UsageError
from netassay.imix import mean_frame_bytes, parse_imix, spec
from netassay.methods import lab
from netassay.methods.base import RunOptions
from netassay.params import param
from netassay.testbed import state as S
from netassay.testbed.bed import config_from_state
from netassay.testbed.linerate import FCS_BYTES, IFG_BYTES, PREAMBLE_SFD_BYTES
from netassay.units import _SI, fmt_rate, parse_rate

_BIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKmMgG]?)\s*(bps|bit/s|bit)\s*$")
_SHARE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
MAX_LOADS = 10_000
L1_EXTRA = PREAMBLE_SFD_BYTES + IFG_BYTES


@dataclass(frozen=True)
class RateFlags:
    """How a load written in bit/s or as a share is read (sweep, search and soak)."""

    layer: str | None = param(
        "--layer",
        "The layer of a load in bit/s (500Mbps): l1, the frame with FCS, preamble, "
        "delimiter and inter-frame gap, as a port's speed is stated; or l2, the frame with "
        "its FCS (default l1).",
        default=None, campaign=False,
    )  # fmt: skip
    line_rate: str | None = param(
        "--line-rate",
        "The path's line rate in bit/s (10G, 10Gbps) for loads written as its shares "
        "(50%, 10%:100%:10%) where no port reports one (the embedded testbed's veths).",
        default=None, campaign=False,
    )  # fmt: skip


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


def parse_layer(text: Any) -> int:
    t = str(text).strip().lower()
    if t in ("l1", "1"):
        return 1
    if t in ("l2", "2"):
        return 2
    raise UsageError(f"bad --layer '{text}'", "a layer is l1 or l2",
                     "give --layer l1 (with preamble and gap) or --layer l2")  # fmt: skip


def parse_bits(text: str, what: str) -> float | None:
    """Bit/s of ``text`` ('500Mbps' -> 5e8), None when it is not written in bit/s."""
    m = _BIT.match(str(text))
    if m is None:
        return None
    value = float(m.group(1)) * _SI[m.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"bad {what} '{text}'", "a bit rate must be positive and finite",
                         "give e.g. 500Mbps")  # fmt: skip
    return value


def parse_line_rate(text: Any) -> float:
    """``--line-rate``: bit/s, with or without the bit unit ('10G', '10Gbps')."""
    t = str(text).strip()
    bits = parse_bits(t if _BIT.match(t) else f"{t}bps", "--line-rate")
    if bits is None:
        raise UsageError(f"bad --line-rate '{text}'", "expected a bit rate",
                         "give e.g. --line-rate 10G (10 Gbit/s)")  # fmt: skip
    return bits


def _share(text: str, what: str) -> float | None:
    m = _SHARE.match(str(text))
    if m is None:
        return None
    share = float(m.group(1)) / 100
    if not 0 < share <= 1:
        raise UsageError(f"bad {what} '{text}'", "a share of the line rate is in (0, 100]%",
                         "give e.g. 50% or 10%:100%:10%")  # fmt: skip
    return share


def kind_of(text: str) -> str:
    """'bit', 'share' or 'pps': how a token is written (nothing is checked)."""
    if _BIT.match(text):
        return "bit"
    if _SHARE.match(text):
        return "share"
    return "pps"


def written(text: Any) -> bool:
    """Whether a load's text holds a token in bit/s or a share (else frames/s only)."""
    return text is not None and any(
        kind_of(t) != "pps" for t in re.split(r"[,:]", str(text)) if t.strip()
    )


def _value(token: str, what: str) -> tuple[str, float]:
    """A token's kind and its value in its own unit (frames/s, bit/s or a share)."""
    bits = parse_bits(token, what)
    if bits is not None:
        return "bit", bits
    share = _share(token, what)
    if share is not None:
        return "share", share
    return "pps", parse_rate(token)


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
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise UsageError(f"bad {what} '{text}'", "a range needs three parts START:STOP:STEP",
                             "write it like 10%:100%:10% or 100Mbps:1Gbps:100Mbps")  # fmt: skip
        (k0, start), (k1, stop), (k2, step) = (_value(p, what) for p in parts)
        if not k0 == k1 == k2:
            raise UsageError(f"bad {what} '{text}'", "a range's three parts mix units",
                             "write START, STOP and STEP in one unit")  # fmt: skip
        if stop < start:
            raise UsageError(f"bad {what} '{text}'", "STOP is below START",
                             "swap them or fix the range")  # fmt: skip
        n = math.floor((stop - start) / step + 1e-9) + 1
        if n > MAX_LOADS:
            raise UsageError(f"bad {what} '{text}'", f"{n} loads", "use a larger STEP")
        out = [to_pps(k0, start + i * step, fr, what, text) for i in range(n)]
    else:
        tokens = [p.strip() for p in text.split(",") if p.strip()]
        out = [to_pps(*_value(t, what), fr, what, t) for t in tokens]
    if not out:
        raise UsageError(f"empty {what}", "no load was given", "write e.g. 1Gbps,2Gbps")
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
def frames_of(options: RunOptions, layer: int, line_bps: float | None) -> Frames:
    """The frame size and line rate of the testbed the run takes (``--testbed``'s state,
    a testbed of that name that is up, else the flags and the config file)."""
    cfg = options.config or Config()
    name = options.testbed or options.name or N.DEFAULT_NAME
    state = S.require_state(name) if options.testbed else S.read_state(name)
    if options.testbed and state is not None:
        tb = config_from_state(state)
    else:
        tb = lab.running_config(name, cfg.testbed, options.testbed_flags)
    tb = with_frame_size(tb)
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
    elif line_bps is not None:
        line_from = "--line-rate"
    imix = getattr(tb, "imix", None)
    if imix:
        mix = parse_imix(imix, tb.ip_version)
        mean, named = mean_frame_bytes(mix), spec(mix)
        return Frames(mean, layer, f"imix {named} (mean {mean:.1f} B)", line_bps, line_from)
    size = float(tb.size_bytes)
    return Frames(size, layer, f"{tb.size_bytes}-byte frames", line_bps, line_from)


def resolve(
    given: dict[str, Any], options: RunOptions, fields: dict[str, str], lists: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``given`` with its loads written in bit/s or as shares (``fields``: key -> flag;
    ``lists``: the keys that hold a list of loads) replaced by frames/s, and what was
    written (None: every load in frames/s, nothing replaced). UsageError, one line, for
    what cannot be converted, before anything is built."""
    layer_text, line_text = given.get("layer"), given.get("line_rate")
    mine = {k: str(given[k]) for k in fields if written(given.get(k))}
    if not mine:
        for text, flag in ((layer_text, "--layer"), (line_text, "--line-rate")):
            if text is not None:
                raise UsageError(
                    f"{flag} with loads in frames/s",
                    f"{flag} reads a load written in bit/s (500Mbps) or as a share (50%)",
                    f"write the load so, or drop {flag}",
                )  # fmt: skip
        return given, None
    if options.resume:
        raise UsageError("a rate in bit/s or a share with --resume",
                         "a resumed run keeps its own loads", "drop them")  # fmt: skip
    layer = 1 if layer_text is None else parse_layer(layer_text)
    line_bps = None if line_text is None else parse_line_rate(line_text)
    fr = frames_of(options, layer, line_bps)
    out, pps = dict(given), {}
    for key, text in mine.items():
        rates = loads(text, fr, fields[key])
        if key not in lists and len(rates) != 1:
            raise UsageError(f"bad {fields[key]} '{text}'", "it takes one load",
                             "give e.g. 500Mbps or 50%")  # fmt: skip
        pps[fields[key]] = rates
        out[key] = ",".join(f"{r:.0f}" for r in rates)
    record = {
        "written": {fields[k]: t for k, t in mine.items()}, "pps": pps,
        "layer": f"l{layer}", "frames": fr.frames, "frame_bytes": fr.frame_bytes,
        "bits_per_frame": {"l1": fr.bits(1), "l2": fr.bits(2)},
        "line_rate_bps": fr.line_bps, "line_rate_from": fr.line_from,
    }  # fmt: skip
    return out, record


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
