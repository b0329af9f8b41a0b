"""NDR and PDR@X% as measured bounds of a load-loss curve. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bound:
    """The highest load such that it and every lower load meet the loss target."""

    target: float  # loss ratio goal (0 for NDR)
    index: int | None  # position in the load list; None when the lowest load fails
    rate_pps: float | None
    met_again: tuple[float, ...]  # higher loads that meet the target again after a failure

    @property
    def below_range(self) -> bool:
        return self.index is None

    def describe(self, name: str) -> str:
        from netassay.units import fmt_rate

        if self.index is None:
            text = f"{name}: below the tested range (the lowest load misses the goal)"
        else:
            text = f"{name} = {fmt_rate(self.rate_pps)}"
        if self.met_again:
            again = ", ".join(fmt_rate(r) for r in self.met_again)
            text += f" (met again at {again})"
        return text


def measured_bound(rate_pps: np.ndarray, plr: np.ndarray, target: float) -> Bound:
    """PDR@target (or NDR with target 0): loads meet it when mean PLR <= target."""
    rate_pps = np.asarray(rate_pps, dtype=np.float64)
    meets = np.asarray(plr, dtype=np.float64) <= target
    fails = np.flatnonzero(~meets)
    first_fail = int(fails[0]) if fails.size else rate_pps.size
    index = first_fail - 1 if first_fail > 0 else None
    again = tuple(float(r) for r in rate_pps[first_fail:][meets[first_fail:]])
    rate = float(rate_pps[index]) if index is not None else None
    return Bound(target, index, rate, again)
