"""How a load is written, before any frame size is known: frames/s (``200k``),
bit/s (``500Mbps``, ``1Gbit``, ``2.5Gbit/s``) or a share of the line rate (``50%``), one
token at a time, a list ``a,b,c`` or a range ``START:STOP:STEP`` in one unit.

What a flag, a config file's key and a campaign file's key share: the tokens' syntax,
the layer and the line rate (``RateFlags``, declared once), and the checks a file's
value gets (``check_load``, ``check_loads``: every token parses, a range has three
parts in one unit). ``shared/rates.py`` converts to frames/s with the testbed's frame.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from netassay.errors import NetassayError, UsageError
from netassay.params import param, tagged
from netassay.units import _SI, parse_rate, parse_rates

_BIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKmMgG]?)\s*(bps|bit/s|bit)\s*$")
_SHARE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
MAX_LOADS = 10_000


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


def _layer_text(v: Any) -> str:
    """A layer as written ('l1', 'l2'), checked."""
    if isinstance(v, bool):
        raise UsageError(f"bad --layer {v!r}", "a layer is l1 or l2", "give l1 or l2")
    return f"l{parse_layer(v)}"


tagged(_layer_text, "l1|l2")


def _line_rate_text(v: Any) -> str:
    """A line rate as written ('10G', '10Gbps'), checked."""
    if isinstance(v, bool):
        raise UsageError(f"bad --line-rate {v!r}", "expected a bit rate", "give e.g. 10G")
    parse_line_rate(v)
    return str(v).strip()


tagged(_line_rate_text, "RATE")


def share(text: str, what: str) -> float | None:
    """The share of ``text`` ('50%' -> 0.5), None when it is not written as one."""
    m = _SHARE.match(str(text))
    if m is None:
        return None
    value = float(m.group(1)) / 100
    if not 0 < value <= 1:
        raise UsageError(f"bad {what} '{text}'", "a share of the line rate is in (0, 100]%",
                         "give e.g. 50% or 10%:100%:10%")  # fmt: skip
    return value


def kind_of(text: str) -> str:
    """'bit', 'share' or 'pps': how a token is written (nothing is checked)."""
    if _BIT.match(text):
        return "bit"
    if _SHARE.match(text):
        return "share"
    return "pps"


def _text(v: Any) -> str | None:
    """A load as text (a file's list joined, a number as written); None for none."""
    if v is None or isinstance(v, bool):
        return None
    return ",".join(map(str, v)) if isinstance(v, list | tuple) else str(v)


def written(text: Any) -> bool:
    """Whether a load's text holds a token in bit/s or a share (else frames/s only)."""
    t = _text(text)
    return t is not None and any(kind_of(p) != "pps" for p in re.split(r"[,:]", t) if p.strip())


def value(token: str, what: str) -> tuple[str, float]:
    """A token's kind and its value in its own unit (frames/s, bit/s or a share)."""
    bits = parse_bits(token, what)
    if bits is not None:
        return "bit", bits
    part = share(token, what)
    if part is not None:
        return "share", part
    return "pps", parse_rate(token)


def tokens(text: str, what: str) -> list[tuple[str, float, str]]:
    """Each load of a list or range as (kind, value in its unit, what was written); a
    range is stepped in its one unit. UsageError for a token or range that cannot be."""
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise UsageError(f"bad {what} '{text}'", "a range needs three parts START:STOP:STEP",
                             "write it like 10%:100%:10% or 100Mbps:1Gbps:100Mbps")  # fmt: skip
        (k0, start), (k1, stop), (k2, step) = (value(p, what) for p in parts)
        if not k0 == k1 == k2:
            raise UsageError(f"bad {what} '{text}'", "a range's three parts mix units",
                             "write START, STOP and STEP in one unit")  # fmt: skip
        if stop < start:
            raise UsageError(f"bad {what} '{text}'", "STOP is below START",
                             "swap them or fix the range")  # fmt: skip
        span = (stop - start) / step  # inf for a step near the smallest float
        if not span < MAX_LOADS:
            raise UsageError(f"bad {what} '{text}'", f"{span + 1:.0f} loads", "use a larger STEP")
        n = math.floor(span + 1e-9) + 1
        values = [start + i * step for i in range(n)]
        if any(b <= a for a, b in itertools.pairwise(values)):
            raise UsageError(f"bad {what} '{text}'", "STEP is below what START can be told from",
                             "use a larger STEP")  # fmt: skip
        return [(k0, x, text) for x in values]
    out = [(*value(t, what), t) for t in (p.strip() for p in text.split(",")) if t]
    if not out:
        raise UsageError(f"empty {what}", "no load was given", "write e.g. 1Gbps,2Gbps")
    return out


@dataclass(frozen=True)
class RateFlags:
    """How a load written in bit/s or as a share is read (sweep, search and soak): a
    flag, a key of their config file's section and of a campaign file."""

    layer: str | None = param(
        "--layer",
        "The layer of a load in bit/s (500Mbps): l1, the frame with FCS, preamble, "
        "delimiter and inter-frame gap, as a port's speed is stated; or l2, the frame with "
        "its FCS (default l1).",
        default=None, parse=_layer_text,
    )  # fmt: skip
    line_rate: str | None = param(
        "--line-rate",
        "The path's line rate in bit/s (10G, 10Gbps) for loads written as its shares "
        "(50%, 10%:100%:10%) where no port reports one (the embedded testbed's veths).",
        default=None, parse=_line_rate_text,
    )  # fmt: skip


def _check(what: str, one: bool) -> Any:
    def check(v: Any) -> Any:
        """A file's load in its canonical form: frames/s as before (a number, or a tuple
        of them); written in bit/s or as a share, its tokens checked, a number in its
        own unit (bit/s, a share) or a tuple of (kind, value)."""
        text = _text(v)
        if text is None:
            raise ValueError("expected a load like 200k, 500Mbps or 50%")
        if not one and text.strip() == AUTO:
            return ()  # loads chosen past the SUT's MRR (AUTO_LOADS)
        try:
            if not written(text):
                return parse_rate(text) if one else tuple(parse_rates(text))
            loads = tokens(text, what)
        except NetassayError as exc:
            raise ValueError(exc.why or exc.what) from exc
        if one:
            if len(loads) != 1:
                raise ValueError("it takes one load, e.g. 500Mbps or 50%")
            return loads[0][1]
        return tuple((k, x) for k, x, _ in loads)

    return tagged(check, "RATE" if one else "RATES")


def check_load(what: str) -> Any:
    """The check of a file's value of a single load (``--max-load``, ``--rate``)."""
    return _check(what, True)


def check_loads(what: str) -> Any:
    """The check of a file's value of a load list (``--rates``)."""
    return _check(what, False)


def units_of(levels: Any) -> set[str]:
    """How a factor's levels of a load are written: {'pps'}, {'bit'}, {'share'} or more."""
    out = set()
    for v in levels:
        t = _text(v)
        out |= {kind_of(p) for p in re.split(r"[,:]", t or "") if p.strip()}
    return out


# A sweep given no loads chooses them on the testbed (``shared.lab.auto_loads``): this
# many, evenly up to AUTO_TOP times the SUT's MRR (a short flood measures it first), or
# to the generator's paced reach where that is lower.
AUTO = "auto"  # --rates auto (and no --rates): the loads chosen so
AUTO_LOADS = 12
AUTO_TOP = 1.3


def auto_rates(mrr_pps: float, reach_pps: float | None = None) -> tuple[float, ...]:
    """The loads of a sweep given none: AUTO_LOADS evenly from the top's 1/AUTO_LOADS up
    to the top, AUTO_TOP x ``mrr_pps`` or ``reach_pps`` where lower; each rounded to
    100 pps (1 kpps from 100 kpps up), none below 1 kpps."""
    top = AUTO_TOP * mrr_pps
    if reach_pps is not None:
        top = min(top, reach_pps)
    out = []
    for i in range(1, AUTO_LOADS + 1):
        r = top * i / AUTO_LOADS
        out.append(max(1000.0, round(r, -3 if r >= 100_000 else -2)))
    return tuple(sorted(set(out)))
