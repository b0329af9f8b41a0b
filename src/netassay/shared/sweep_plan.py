"""The sweep plan, pure: which trials, in which order, how long it takes, what is left."""

from __future__ import annotations

import math
from dataclasses import dataclass

from netassay.errors import UsageError
from netassay.loads import AUTO_LOADS, AUTO_TOP
from netassay.units import fmt_duration, fmt_rate

TRIAL_OVERHEAD_S = 0.8  # counter snapshots, settling, generator start (measured here)
AUTO_PROBE_S = 6.0  # the flood, the paced probe of the top load and their set-up


@dataclass(frozen=True)
class Plan:
    rates_pps: tuple[float, ...]  # empty: chosen on the testbed when the sweep starts
    runs: int
    duration_s: float
    settle_s: float = 0.5

    @property
    def auto(self) -> bool:
        """The loads are chosen on the testbed (see AUTO_LOADS)."""
        return not self.rates_pps

    @property
    def loads(self) -> int:
        return len(self.rates_pps) or AUTO_LOADS

    def count(self) -> int:
        """Trials planned (with chosen loads: as many as they will be)."""
        return self.loads * self.runs

    def __post_init__(self) -> None:
        if any(not math.isfinite(r) or r <= 0 for r in self.rates_pps):
            raise UsageError("bad rate list", "every load must be positive", "fix --rates")
        if self.runs < 1:
            raise UsageError(f"bad --runs {self.runs}", "at least one run per load", "e.g. 10")
        if not math.isfinite(self.duration_s) or self.duration_s <= 0:
            raise UsageError(
                f"bad --duration {self.duration_s:g}", "a trial must last > 0 s", "e.g. 2s"
            )
        if not math.isfinite(self.settle_s) or self.settle_s < 0:
            raise UsageError(f"bad --settle {self.settle_s:g}", "it must be >= 0", "e.g. 0.5s")

    def trials(self) -> list[tuple[int, int, float]]:
        """(load index, repetition, rate) in run order: load by load, K repetitions each."""
        return [(i, k, r) for i, r in enumerate(self.rates_pps) for k in range(self.runs)]

    def remaining(self, done: set[tuple[int, int]]) -> list[tuple[int, int, float]]:
        return [t for t in self.trials() if (t[0], t[1]) not in done]

    def packets(self) -> int:
        return sum(round(r * self.duration_s) for r in self.rates_pps) * self.runs


def trial_time_s(duration_s: float, settle_s: float) -> float:
    return duration_s + settle_s + TRIAL_OVERHEAD_S


def estimate_s(plan: Plan, n_trials: int | None = None) -> float:
    n = plan.count() if n_trials is None else n_trials
    probe = AUTO_PROBE_S if plan.auto else 0.0
    return probe + n * trial_time_s(plan.duration_s, plan.settle_s)


def eta_s(elapsed_s: float, done: int, total: int, plan: Plan) -> float:
    """Time left: measured pace once a trial is done, the estimate before."""
    left = max(0, total - done)
    if done <= 0:
        return estimate_s(plan, left)
    return elapsed_s / done * left


def describe(plan: Plan, done: set[tuple[int, int]] | None = None) -> str:
    """What a sweep will do (for --dry-run)."""
    if plan.auto:
        return "\n".join([
            f"loads ({AUTO_LOADS}): chosen when it starts: a 1 s flood measures the SUT's "
            f"maximum receive rate (MRR), then {AUTO_LOADS} loads evenly up to {AUTO_TOP:g}x "
            "it (to the generator's paced reach where that is lower; said when it is)",
            f"runs per load: {plan.runs}; trial: {plan.duration_s:g} s + settle "
            f"{plan.settle_s:g} s",
            f"trials: {plan.count()} planned",
            f"estimated time: {fmt_duration(estimate_s(plan))}",
        ])  # fmt: skip
    left = plan.remaining(done or set())
    rates = ", ".join(fmt_rate(r) for r in plan.rates_pps)
    lines = [
        f"loads ({len(plan.rates_pps)}): {rates}",
        f"runs per load: {plan.runs}; trial: {plan.duration_s:g} s + settle {plan.settle_s:g} s",
        f"trials: {len(plan.trials())} planned, {len(left)} to run",
        f"packets to send: {plan.packets():,}",
        f"estimated time: {fmt_duration(estimate_s(plan, len(left)))}",
    ]
    return "\n".join(lines)
