"""NDR and PDR@X% as measured bounds of a load-loss curve. Pure functions."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from netassay.units import fmt_rate


@dataclass(frozen=True)
class Bound:
    """The highest load such that it and every lower load meet the loss target.

    A load that was not measured (no usable trial) meets nothing: the bound stops below
    it, so no bound ever rests on a load that was never measured.
    """

    target: float  # loss ratio goal (0 for NDR)
    index: int | None  # position in the load list; None when the lowest load fails
    rate_pps: float | None
    met_again: tuple[float, ...]  # higher loads that meet the target again after a failure
    gap_rate_pps: float | None = None  # the unmeasured load the bound stops below, if any

    top: bool = False  # the bound is the highest load tested: nothing above it was measured

    @property
    def below_range(self) -> bool:
        return self.index is None and self.gap_rate_pps is None

    @property
    def at_least(self) -> bool:
        """No measured load above the bound missed the goal: it is the highest load tested,
        or it stops below a load not measured. The true bound is at least this rate."""
        return self.index is not None and (self.top or self.gap_rate_pps is not None)

    def short(self) -> str:
        """The bound for a table cell: a rate ('>= rate' when it is only at least that),
        'below range' or 'unknown'."""
        if self.index is not None:
            return (">= " if self.at_least else "") + fmt_rate(self.rate_pps)
        return "unknown (lowest load not measured)" if self.gap_rate_pps else "below range"

    def describe(self, name: str) -> str:
        if self.index is None and self.gap_rate_pps is not None:
            gap = fmt_rate(self.gap_rate_pps)
            text = f"{name}: unknown (the lowest load, {gap}, was not measured)"
        elif self.index is None:
            text = f"{name}: below the tested range (the lowest load misses the goal)"
        else:
            text = f"{name} {'>=' if self.at_least else '='} {fmt_rate(self.rate_pps)}"
            if self.gap_rate_pps is not None:
                text += f" (stops below {fmt_rate(self.gap_rate_pps)}, not measured)"
            elif self.top:
                text += " (the highest load tested: no load above it was)"
        if self.met_again:
            again = ", ".join(fmt_rate(r) for r in self.met_again)
            text += f" (met again at {again})"
        return text


def measured_bound(rate_pps: np.ndarray, loss: np.ndarray, target: float) -> Bound:
    """The bound at ``target``: loads meet it when ``loss`` <= target (nan: not measured).

    PDR@X% passes the mean PLR per load; NDR passes each load's largest per-trial loss
    ratio with target 0, so NDR means every trial of the load lost nothing (a trial
    with negative loss, rx > tx, counts as zero and never offsets loss in another).
    """
    rates = np.asarray(rate_pps, dtype=np.float64).tolist()
    losses = np.asarray(loss, dtype=np.float64).tolist()
    meets = [x <= target for x in losses]  # nan (not measured) meets nothing
    first_fail = meets.index(False) if False in meets else len(meets)
    index = first_fail - 1 if first_fail > 0 else None
    again = tuple(r for r, ok in zip(rates[first_fail:], meets[first_fail:], strict=True) if ok)
    rate = rates[index] if index is not None else None
    gap = None
    if first_fail < len(rates) and math.isnan(losses[first_fail]):
        gap = rates[first_fail]
    return Bound(target, index, rate, again, gap, top=first_fail == len(rates))
