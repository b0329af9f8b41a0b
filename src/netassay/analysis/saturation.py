"""Saturation detection and the trust verdict on PDR (PASTRAMI, section V, Fig. 7).

Two modes:
- ``described`` (default): the rule of the paper's section V-A. Enter saturation when
  TIR < entry_factor * eta (the notebook's entry threshold 3 * eta; entry_factor 1 gives
  the text's "TIR < eta"), then stay while TIR <= eta ("remains below or equal to the
  threshold eta for all subsequent increases"). Beyond the paper: INCONCLUSIVE when the
  tested range has no potential saturation point, or when the loss already exceeds the
  PDR fraction at the lowest load: PDR then lies below the range and saturation cannot
  be shown to start at it (a measured TIR that breaks saturation is still BAD: the true
  potential point can only be lower, and saturation must hold through that TIR too).
- ``published``: exactly the authors' notebook, whose condition
  ``TIR < eta if in_sat else eta * 3`` parses as ``(TIR < eta) if in_sat else 0.3``,
  so the first load examined is always taken as saturated; GOOD/BAD only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

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


def _fmt(rate: float) -> str:
    from netassay.units import fmt_rate

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


def detect_saturation(
    rate_pps: np.ndarray,
    plr: np.ndarray,
    tir: np.ndarray,
    *,
    pdr: float = 0.005,
    eta: float = 0.1,
    entry_factor: float = 3.0,
    mode: str = "described",
) -> Saturation:
    """Find the potential saturation point, walk the TIR from there, give the verdict."""
    n = int(np.asarray(plr).size)
    published = mode == "published"
    over = np.flatnonzero(np.asarray(plr) > pdr)
    past = int(over[0]) if over.size else None
    pot = past + 1 if past is not None else None
    pct = f"{pdr * 100:g}%"
    if past is None:
        reason = f"the loss never exceeds {pct} in the tested range: widen it to higher loads"
        return Saturation(BAD if published else INCONCLUSIVE, reason, None, None, None)
    if pot >= n:
        reason = (
            f"the loss exceeds {pct} only at the last load ({_fmt(rate_pps[past])}): "
            "no load after it to confirm saturation; widen the range"
        )
        return Saturation(BAD if published else INCONCLUSIVE, reason, past, None, None)
    sat, exits = _walk(np.asarray(tir), pot, eta, entry_factor * eta, published)
    warnings: list[str] = []
    if pot == n - 1:
        warnings.append("saturation rests on a single load after the PDR point: add higher loads")
    if past == 0:
        warnings.append(
            f"the loss already exceeds {pct} at the lowest load: PDR is below the tested range"
        )
    entry = eta if published else entry_factor * eta
    if sat == pot and past == 0 and not published:
        reason = (
            f"saturation holds from the potential saturation point ({_fmt(rate_pps[pot])}) "
            f"to the last load, but the loss already exceeds {pct} at the lowest load "
            f"({_fmt(rate_pps[0])}): PDR@{pct} lies below the tested range, so it cannot be "
            "shown to mark the onset of saturation; start the range lower"
        )
        return Saturation(INCONCLUSIVE, reason, past, pot, sat, tuple(exits), tuple(warnings))
    if sat == pot:
        reason = (
            f"saturation starts at the potential saturation point ({_fmt(rate_pps[pot])}, "
            f"TIR {tir[pot]:.3g}) and holds to the last load: PDR@{pct} marks the onset of "
            "saturation"
        )
        return Saturation(GOOD, reason, past, pot, sat, tuple(exits), tuple(warnings))
    if exits:
        reason = (
            f"saturation is left again at {_fmt(rate_pps[exits[-1]])} (TIR "
            f"{tir[exits[-1]]:.3g} {'>=' if published else '>'} {eta:g}): loss comes and goes"
        )
        if sat is not None:
            reason += f"; saturation is held only from {_fmt(rate_pps[sat])}"
    elif sat is not None:
        reason = (
            f"saturation is entered only at {_fmt(rate_pps[sat])}, later than the potential "
            f"saturation point {_fmt(rate_pps[pot])}: the loss rises slowly beyond PDR@{pct}"
        )
    else:
        reason = (
            f"TIR never falls below {entry:g} after the potential saturation point "
            f"{_fmt(rate_pps[pot])}: the router still converts load into throughput"
        )
    return Saturation(BAD, reason, past, pot, sat, tuple(exits), tuple(warnings))


def is_finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
