"""Saturation detection and the trust verdict on PDR (PASTRAMI, section V, Fig. 7).

Two modes:
- ``described`` (default): the rule of the paper's section V-A. Enter saturation when
  TIR < entry_factor * eta (the notebook's entry threshold 3 * eta; entry_factor 1 gives
  the text's "TIR < eta"), then stay while TIR <= eta ("remains below or equal to the
  threshold eta for all subsequent increases"). Beyond the paper: INCONCLUSIVE whenever
  the tested range cannot support the verdict: no potential saturation point, a PDR that
  lies below the lowest load, or a load not measured where the verdict needs it.
- ``published``: exactly the authors' notebook, whose condition
  ``TIR < eta if in_sat else eta * 3`` parses as ``(TIR < eta) if in_sat else 0.3``,
  so the first load examined is always taken as saturated; GOOD/BAD only.

A load without a usable trial (all excluded, or not measured yet) has a nan PLR and
breaks TIR on both sides of it. In the described mode it can neither confirm nor deny
saturation: it clears a detection in progress without counting as an exit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from netassay.store.loads import NOT_MEASURED
from netassay.units import fmt_rate

GOOD, BAD, INCONCLUSIVE = "GOOD", "BAD", "INCONCLUSIVE"


@dataclass(frozen=True)
class Saturation:
    verdict: str
    reason: str
    past_pdr_index: int | None  # first load whose PLR exceeds the PDR fraction
    potential_saturation_index: int | None  # the load after it
    saturation_index: int | None  # where saturation was entered (and held to the end)
    exits: tuple[int, ...] = ()  # loads at which a detected saturation was left
    warnings: tuple[str, ...] = field(default_factory=tuple)
    gaps: tuple[int, ...] = ()  # loads not measured (no usable trial)


def _fmt(rate: float) -> str:
    return fmt_rate(rate)


def _walk(
    tir: np.ndarray, start: int, eta: float, entry: float, published: bool
) -> tuple[int | None, list[int]]:
    """Scan loads from ``start``; return (index where saturation holds to the end, exits)."""
    in_sat = False
    sat_index: int | None = None
    exits: list[int] = []
    for i in range(start, tir.size):
        value = float(tir[i])
        if published:
            saturated = (value < eta) if in_sat else bool(eta * 3)
        elif math.isnan(value):  # next to a load not measured: no evidence either way
            in_sat, sat_index = False, None
            continue
        else:
            saturated = value <= eta if in_sat else value < entry
        if saturated:
            if not in_sat:
                in_sat, sat_index = True, i
        else:
            if in_sat:
                exits.append(i)
            in_sat, sat_index = False, None
    return sat_index, exits


def _first_failure(tir: np.ndarray, pot: int, eta: float, entry: float) -> int | None:
    """The first measured TIR that rules GOOD out (described mode), or None."""
    if math.isfinite(tir[pot]) and tir[pot] >= entry:
        return pot
    later = tir[pot + 1 :]
    bad = np.flatnonzero(np.isfinite(later) & (later > eta))
    return pot + 1 + int(bad[0]) if bad.size else None


def _loads_text(rate_pps: np.ndarray, idx: Sequence[int], reasons: Sequence[str]) -> str:
    parts = []
    for i in idx:
        why = reasons[i] if i < len(reasons) else ""
        parts.append(_fmt(rate_pps[i]) + (f" ({why})" if why and why != NOT_MEASURED else ""))
    return ", ".join(parts)


def detect_saturation(
    rate_pps: np.ndarray,
    plr: np.ndarray,
    tir: np.ndarray,
    *,
    pdr: float = 0.005,
    eta: float = 0.1,
    entry_factor: float = 3.0,
    mode: str = "described",
    reasons: Sequence[str] = (),
) -> Saturation:
    """Find the potential saturation point, walk the TIR from there, give the verdict.

    ``reasons`` (per load) say why a load was not measured, for the messages.
    """
    rate_pps, plr, tir = (np.asarray(a, dtype=np.float64) for a in (rate_pps, plr, tir))
    n = int(plr.size)
    published = mode == "published"
    undecided = BAD if published else INCONCLUSIVE
    gaps = tuple(int(i) for i in np.flatnonzero(np.isnan(plr)))
    gap_text = _loads_text(rate_pps, gaps, reasons)
    notes = [f"not measured: {gap_text}; TIR and the bounds stop there"] if gaps else []
    over = np.flatnonzero(plr > pdr)
    past = int(over[0]) if over.size else None
    pct = f"{pdr * 100:g}%"
    if len(gaps) == n:
        reason = "no load was measured" + (f": {gap_text}" if n else "")
        return Saturation(undecided, reason, None, None, None, gaps=gaps, warnings=tuple(notes))
    if past is None:
        reason = f"the loss never exceeds {pct} in the tested range: widen it to higher loads"
        if gaps and not published:
            reason = _generator_bound(rate_pps, plr, gaps, reasons, pct) or (
                f"{reason}; the loss at {gap_text} is unknown"
            )
        return Saturation(undecided, reason, None, None, None, gaps=gaps, warnings=tuple(notes))
    pot = past + 1
    if pot >= n:
        reason = (
            f"the loss exceeds {pct} only at the last load ({_fmt(rate_pps[past])}): "
            "no load after it to confirm saturation; widen the range"
        )
        return Saturation(undecided, reason, past, None, None, gaps=gaps, warnings=tuple(notes))
    entry = eta if published else entry_factor * eta
    sat, exits = _walk(tir, pot, eta, entry_factor * eta, published)
    warnings = list(notes)
    if pot == n - 1:
        warnings.append("saturation rests on a single load after the PDR point: add higher loads")
    if past == 0:
        warnings.append(
            f"the loss already exceeds {pct} at the lowest load: PDR is below the tested range"
        )
    ctx = _Ctx(rate_pps, tir, past, pot, sat, exits, eta, entry, pct, gaps, reasons)
    verdict, reason = _published(ctx) if published else _described(ctx)
    return Saturation(verdict, reason, past, pot, sat, tuple(exits), tuple(warnings), gaps)


@dataclass(frozen=True)
class _Ctx:
    rate: np.ndarray
    tir: np.ndarray
    past: int
    pot: int
    sat: int | None
    exits: list[int]
    eta: float
    entry: float
    pct: str
    gaps: tuple[int, ...]
    reasons: Sequence[str]


def _good_reason(c: _Ctx) -> str:
    return (
        f"saturation starts at the potential saturation point ({_fmt(c.rate[c.pot])}, "
        f"TIR {c.tir[c.pot]:.3g}) and holds to the last load: PDR@{c.pct} marks the onset of "
        "saturation"
    )


def _bad_reason(c: _Ctx, fail: int | None, sign: str) -> str:
    if c.exits:
        last = c.exits[-1]
        reason = (
            f"saturation is left again at {_fmt(c.rate[last])} (TIR "
            f"{c.tir[last]:.3g} {sign} {c.eta:g}): loss comes and goes"
        )
        if c.sat is not None:
            reason += f"; saturation is held only from {_fmt(c.rate[c.sat])}"
        return reason
    if fail is not None and fail != c.pot:
        return (
            f"TIR {c.tir[fail]:.3g} > {c.eta:g} at {_fmt(c.rate[fail])}, after the potential "
            f"saturation point {_fmt(c.rate[c.pot])}: the system is not saturated there"
        )
    if c.sat is not None:
        return (
            f"saturation is entered only at {_fmt(c.rate[c.sat])}, later than the potential "
            f"saturation point {_fmt(c.rate[c.pot])}: the loss rises slowly beyond PDR@{c.pct}"
        )
    return (
        f"TIR never falls below {c.entry:g} after the potential saturation point "
        f"{_fmt(c.rate[c.pot])}: the router still converts load into throughput"
    )


def _published(c: _Ctx) -> tuple[str, str]:
    if c.sat == c.pot:
        return GOOD, _good_reason(c)
    return BAD, _bad_reason(c, None, ">=")


def _described(c: _Ctx) -> tuple[str, str]:
    """GOOD only when nothing the range lacks could change it; BAD only on measured TIR.

    A measured TIR that fails the rule after the potential saturation point rules GOOD
    out whatever lies below the range or in a gap: the true potential point can only
    be lower, never higher, and from there saturation must hold through that TIR too.
    """
    below = [g for g in c.gaps if g < c.past]
    if c.sat == c.pot and c.past > 0 and not below:
        return GOOD, _good_reason(c)
    fail = _first_failure(c.tir, c.pot, c.eta, c.entry)
    if fail is not None:
        return BAD, _bad_reason(c, fail, ">")
    if c.sat == c.pot and c.past == 0:
        return INCONCLUSIVE, (
            f"saturation holds from the potential saturation point ({_fmt(c.rate[c.pot])}) "
            f"to the last load, but the loss already exceeds {c.pct} at the lowest load "
            f"({_fmt(c.rate[0])}): PDR@{c.pct} lies below the tested range, so it cannot be "
            "shown to mark the onset of saturation; start the range lower"
        )
    if c.sat == c.pot:
        return INCONCLUSIVE, (
            f"saturation holds from the potential saturation point ({_fmt(c.rate[c.pot])}) "
            f"to the last load, but {_loads_text(c.rate, below, c.reasons)} below it "
            f"{'was' if len(below) == 1 else 'were'} not measured: the loss may exceed "
            f"{c.pct} there, so the potential saturation point is uncertain; measure again"
        )
    gap = next((g for g in c.gaps if g >= c.pot), None)
    bound = "generator-bound: " if gap is not None and _generator_gap(c.reasons, gap) else ""
    if gap is None:  # a TIR undefined for another reason (e.g. a trial that sent nothing)
        return INCONCLUSIVE, (
            f"TIR is undefined after the potential saturation point {_fmt(c.rate[c.pot])}: "
            "saturation can be neither confirmed nor ruled out; check the trials"
        )
    return INCONCLUSIVE, (
        f"{bound}load {_loads_text(c.rate, [gap], c.reasons)} after the PDR@{c.pct} point was not "
        "measured: saturation can be neither confirmed nor ruled out across it; measure it "
        "again"
    )


GENERATOR_KINDS = ("generator limit", "generator stall", "rate overshoot", "truncated trial")


def _generator_gap(reasons: Sequence[str], i: int) -> bool:
    """Load ``i`` is a gap because the generator could not pace it (its trials'
    faults are the generator's alone)."""
    why = reasons[i] if i < len(reasons) else ""
    kinds = why.split(": ", 1)[1] if ": " in why else ""
    named = [k.split(" (")[0] for k in kinds.split(", ")] if kinds else []
    return bool(named) and all(k in GENERATOR_KINDS for k in named)


def _generator_bound(
    rate: np.ndarray, plr: np.ndarray, gaps: tuple[int, ...], reasons: Sequence[str], pct: str
) -> str | None:
    """The reason of a range whose top the generator could not pace: every load above the
    highest measured one is a gap of the generator's, and nothing measured lost more
    than the PDR fraction. The SUT carried everything up to the generator's reach."""
    measured = np.flatnonzero(~np.isnan(plr))
    top = int(measured[-1])
    above = [g for g in gaps if g > top]
    if not above or len(above) != len(gaps) or not all(_generator_gap(reasons, g) for g in above):
        return None
    return (
        f"generator-bound: the loss never exceeds {pct} up to {_fmt(rate[top])}, and the "
        f"loads above ({_loads_text(rate, above, reasons)}) are beyond what the generator "
        f"paces on this host now: PDR@{pct} is at least {_fmt(rate[top])}; free the "
        "generator's CPU (see 'netassay testbed show') or sweep lower"
    )


def is_finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
