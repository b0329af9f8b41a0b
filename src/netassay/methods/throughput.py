"""The SUT's throughput as burst, recovery and reconfig take it: a rate given, a share
of the PDR of the newest search stored in --db (looked up through the registry: the
search's own lookup, ``search.pdr_rate``), or (burst, recovery: ``search``) a short
search run first on the same testbed (``search.measure_pdr``)."""

from __future__ import annotations

import re
from typing import Any

from netassay import methods as registry
from netassay.errors import NetassayError, UsageError
from netassay.params import as_text, tagged
from netassay.units import parse_rate

MEASURE = "search"  # a short search run first, on the same testbed
PDR_SHARE = re.compile(r"([0-9]+(?:\.[0-9]+)?)%pdr")


def parse(flag: str, text: Any) -> str:
    """A rate ('200k') or a share of the stored PDR ('90%pdr', 'pdr' for 100%), checked
    and kept as written (the PDR is looked up when the run starts)."""
    t = str(text).strip().lower()
    if t in ("pdr", MEASURE):
        return t
    m = PDR_SHARE.fullmatch(t)
    if m is not None:
        if not 0 < float(m.group(1)) <= 200:
            raise UsageError(f"bad {flag} '{text}'", "a share of the PDR in (0, 200]%",
                             "give e.g. 90%pdr")  # fmt: skip
        return t
    if "%" in t or "pdr" in t:
        raise UsageError(f"bad {flag} '{text}'", "a share of the PDR is written N%pdr",
                         "give e.g. 90%pdr, pdr, or a rate like 200k")  # fmt: skip
    parse_rate(t)
    return t


def parser(flag: str) -> Any:
    return as_text(lambda v: parse(flag, v))


def checker(flag: str) -> Any:
    """A config or campaign file's value: a rate in frames/s or a share of the PDR."""

    def check(v: Any) -> Any:
        try:
            return parse(flag, v)
        except NetassayError as exc:
            raise ValueError(exc.why or exc.what) from exc

    return tagged(check, "RATE")


def share(text: str) -> float | None:
    """The share of the PDR ``text`` asks for (1.0 for 'pdr'), None for a rate."""
    if text == "pdr":
        return 1.0
    m = PDR_SHARE.fullmatch(text)
    return float(m.group(1)) / 100 if m else None


def resolve(text: str, db: str | None, flag: str) -> tuple[float | None, dict[str, Any] | None]:
    """(frames/s, the stored search it came from or None): a rate as it is, a share of
    the newest stored search's PDR looked up in ``db``; (None, None) for ``search``
    (measured when the testbed is open: ``measure``)."""
    if text == MEASURE:
        return None, None
    s = share(text)
    if s is None:
        return parse_rate(text), None
    try:
        return registry.method("search").pdr_rate(s, db)
    except UsageError as exc:
        raise UsageError(
            f"{flag} {text} needs a stored search's PDR", exc.why,
            f"run 'netassay search --db FILE' first, or give {flag} as a rate like 200k",
        ) from exc  # fmt: skip


def measure(
    tb: Any, ctx: Any, store: Any, testbed: Any, label: str, note: Any
) -> tuple[float, dict[str, Any]]:
    """``--throughput search``: a short search for the PDR@0.5% on the open testbed,
    stored as a search experiment of its own; (its PDR, where it came from)."""
    m = registry.method("search")
    return m.measure_pdr(tb, ctx, store, testbed, label, note)
