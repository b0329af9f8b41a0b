"""Human units, parsed only at the CLI: 10k, 1.5M, 10G (k = 1000), 2s, 500ms."""

from __future__ import annotations

import itertools
import math
import re
from datetime import UTC, datetime
from typing import Any

from netassay.errors import UsageError

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKmMgG]?)\s*(pps)?\s*$")
_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|min|h)?\s*$")
_DUR_UNIT = {None: 1.0, "s": 1.0, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_count(text: str, what: str = "value") -> float:
    """Parse '10k', '1.5M', '200000' into a float; k = 1000."""
    m = _NUM.match(str(text))
    if not m:
        raise UsageError(
            f"bad {what} '{text}'",
            "expected a number with an optional k/M/G suffix (k = 1000)",
            "write it like 200k, 1.5M or 250000",
        )
    value = float(m.group(1)) * _SI[m.group(2)]
    if not math.isfinite(value):
        raise UsageError(f"bad {what} '{text}'", "not a finite number", "give a finite value")
    return value


def parse_whole(text: Any, what: str = "count") -> int:
    """'1k', '100k', '1M', 250000 as a whole number (k = 1000); UsageError if not."""
    if isinstance(text, bool):
        raise UsageError(f"bad {what} {text!r}", "expected a whole number", "e.g. 1k or 100000")
    if isinstance(text, int):
        return text
    value = parse_count(str(text).strip(), what)
    if value != int(value):
        raise UsageError(f"bad {what} '{text}'", "not a whole number", "e.g. 1k or 100000")
    return int(value)


# past what any link carries, in frames or in bits a second, and any run lasts: a
# value above is a typo, refused before a plan multiplies it (rate x duration) to no
# number at all
MAX_RATE = 1e12
MAX_DURATION_S = 1e8  # about three years


def parse_rate(text: str) -> float:
    value = parse_count(text, "rate")
    if value <= 0:
        raise UsageError(f"bad rate '{text}'", "a rate must be positive", "give e.g. 100k")
    if value > MAX_RATE:
        raise UsageError(
            f"bad rate '{text}'", f"above {MAX_RATE:.0e} a second, more than any link carries",
            "give e.g. 100k",
        )  # fmt: skip
    return value


def parse_duration(text: str) -> float:
    """Parse '2s', '500ms', '1.5', '1m' into seconds (> 0)."""
    m = _DUR.match(str(text))
    if not m:
        raise UsageError(
            f"bad duration '{text}'",
            "expected a number with an optional unit (ms, s, m, h)",
            "write it like 2s, 500ms or 10",
        )
    value = float(m.group(1)) * _DUR_UNIT[m.group(2)]
    if value <= 0:
        raise UsageError(f"bad duration '{text}'", "a duration must be positive", "give e.g. 2s")
    if not math.isfinite(value):
        raise UsageError(f"bad duration '{text}'", "not a finite number", "give e.g. 2s")
    if value > MAX_DURATION_S:
        raise UsageError(
            f"bad duration '{text}'", f"longer than {MAX_DURATION_S:.0e} s (about three years)",
            "give e.g. 2s",
        )  # fmt: skip
    return value


def parse_rates(text: str) -> list[float]:
    """Parse a load list: 'START:STOP:STEP' (inclusive) or 'a,b,c'."""
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise UsageError(
                f"bad rate list '{text}'",
                "a range needs three parts START:STOP:STEP",
                "write it like 50k:600k:50k",
            )
        start, stop, step = (parse_rate(p) for p in parts)
        if stop < start:
            raise UsageError(
                f"bad rate list '{text}'", "STOP is below START", "swap them or fix the range"
            )
        span = (stop - start) / step  # inf for a step near the smallest float
        if not span < 10_000:
            raise UsageError(
                f"bad rate list '{text}'", f"{span + 1:.0f} loads", "use a larger STEP"
            )
        n = math.floor(span + 1e-9) + 1
        out = [start + i * step for i in range(n)]
        if any(b <= a for a, b in itertools.pairwise(out)):
            raise UsageError(
                f"bad rate list '{text}'", "STEP is below what START can be told from",
                "use a larger STEP",
            )  # fmt: skip
        return out
    rates = [parse_rate(p) for p in text.split(",") if p.strip()]
    if not rates:
        raise UsageError("empty rate list", "no load was given", "write e.g. 100k,200k,300k")
    if any(b <= a for a, b in itertools.pairwise(rates)):
        raise UsageError(
            f"bad rate list '{text}'", "loads must increase strictly", "sort them and drop repeats"
        )
    return rates


def fmt_rate(pps: float | None) -> str:
    """Format a packet rate for people: 1.25 Mpps, 300 kpps."""
    if pps is None:
        return "-"
    for div, unit in ((1e9, "Gpps"), (1e6, "Mpps"), (1e3, "kpps")):
        if abs(pps) >= div:
            return f"{pps / div:.4g} {unit}"
    return f"{pps:.4g} pps"


def fmt_latency(ns: float) -> str:
    """A latency bound or figure in ns, as people write it: '100 us', '2.5 ms'."""
    return f"{ns / 1e3:g} us" if ns < 1e6 else f"{ns / 1e6:g} ms"


def fmt_us(ns: float | None) -> str:
    """A time in ns in microseconds to a tenth: '12.3 us' ('-' for none)."""
    return "-" if ns is None else f"{ns / 1e3:.1f} us"


def parse_pause(text: str) -> float:
    """A pause between trials: a duration, or 0 (``0`` and ``0s`` are allowed here)."""
    t = text.strip().removesuffix("s")
    try:
        if float(t) == 0:  # 0, 0s, 0.0 (a file's number)
            return 0.0
    except ValueError:
        pass
    return parse_duration(text)


def utc_now() -> str:
    """The current UTC time as ISO 8601 with microseconds (how every record is stamped)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def fmt_duration(s: float) -> str:
    s = max(0.0, s)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
