"""What a search looks for: its goals and the load range. Pure, validated at the CLI.

A goal is MLRsearch's: a loss ratio (0 for NDR), an exceed ratio (the share of trial
time allowed above the loss ratio at a lower bound), a relative width (when the relevant
lower and upper bounds are close enough), initial and final trial durations and the
duration sum that classifies a load. CSIT's defaults: 1 s trials, 21 s duration sum,
width 0.5%, exceed ratio 0.5.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from netassay.errors import UsageError
from netassay.hist import SinkHist
from netassay.params import goal_ratio
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S
from netassay.units import fmt_latency, fmt_rate

if TYPE_CHECKING:
    from MLRsearch import Config, SearchGoal

MLRSEARCH_VERSION = "1.2.1"
DEFAULT_GOALS = ("ndr", "pdr:0.005")
MIN_LOAD_FRACTION = 0.01  # without --min-load: 1% of the max load
TIME_CAP_S = 1200.0  # CSIT's default search_duration_max


@dataclass(frozen=True)
class Goal:
    loss_ratio: float
    exceed_ratio: float = 0.5
    relative_width: float = 0.005
    initial_trial_duration_s: float = 1.0
    final_trial_duration_s: float = 1.0
    duration_sum_s: float = 21.0

    @property
    def key(self) -> str:
        """'ndr' or 'pdr:0.005': how the goal is written on the command line and in JSON."""
        return "ndr" if self.loss_ratio == 0 else f"pdr:{self.loss_ratio:g}"

    @property
    def label(self) -> str:
        return "NDR" if self.loss_ratio == 0 else f"PDR@{self.loss_ratio * 100:g}%"

    def validate(self) -> None:
        g = self.key
        if not 0 <= self.loss_ratio < 1:
            raise UsageError(
                f"bad goal loss ratio {self.loss_ratio:g}", "it must be in [0, 1)", "e.g. 0.005"
            )
        if not 0 <= self.exceed_ratio < 1:
            raise UsageError(
                f"bad --exceed-ratio {self.exceed_ratio:g}", "it must be in [0, 1)", "e.g. 0.5"
            )
        if not 0 < self.relative_width < 1:
            raise UsageError(
                f"bad --width {self.relative_width:g}", "it must be in (0, 1)", "e.g. 0.5%"
            )
        d0, d1, total = (
            self.initial_trial_duration_s, self.final_trial_duration_s, self.duration_sum_s
        )  # fmt: skip
        if not all(math.isfinite(x) and x > 0 for x in (d0, d1, total)):
            raise UsageError(f"goal {g}: bad durations", "they must be positive", "e.g. 1s")
        if d1 < d0:
            raise UsageError(
                f"goal {g}: final trial duration {d1:g} s is below the initial {d0:g} s",
                "trials get longer as the search narrows",
                "raise --final-duration or lower --initial-duration",
            )
        if total < d1:
            raise UsageError(
                f"goal {g}: duration sum {total:g} s is below the final trial duration {d1:g} s",
                "a load is classified by at least one full-length trial",
                "raise --duration-sum",
            )

    def to_mlr(self) -> SearchGoal:
        """The MLRsearch goal. ``fail_fast`` is off: loss already at the min load is a
        result (no lower bound), not a crash."""
        from MLRsearch import SearchGoal  # deferred: MLRsearch (0.2 s), only a search needs it

        return SearchGoal(
            loss_ratio=self.loss_ratio,
            exceed_ratio=self.exceed_ratio,
            relative_width=self.relative_width,
            initial_trial_duration=self.initial_trial_duration_s,
            final_trial_duration=self.final_trial_duration_s,
            duration_sum=self.duration_sum_s,
            fail_fast=False,
        )


@dataclass(frozen=True)
class LatencyBound:
    """``--max-latency pP:BOUND``: percentile ``percentile`` of a trial's one-way latency
    (the XDP sink's histogram) at or below ``bound_ns``."""

    percentile: float
    bound_ns: float

    @property
    def label(self) -> str:
        return f"p{self.percentile:g} <= {fmt_latency(self.bound_ns)}"

    def of(self, latency: dict[str, Any] | None) -> float | None:
        """The trial's value of the percentile (None: it holds no latency)."""
        if not latency:
            return None
        return SinkHist(latency).percentile(self.percentile)


def parse_max_latency(text: Any) -> LatencyBound:
    """'p99:100us' -> LatencyBound(99, 100000); 'p50:2ms', 'p99.9:1ms'."""
    t = str(text).strip().lower()
    m = re.fullmatch(r"p([0-9]+(?:\.[0-9]+)?):(.+)", t)
    if m is None:
        raise UsageError(f"bad --max-latency '{text}'", "it is pP:BOUND",
                         "give e.g. p99:100us")  # fmt: skip
    p = float(m.group(1))
    if not 0 < p <= 100:
        raise UsageError(f"bad --max-latency '{text}'", "a percentile in (0, 100]",
                         "give e.g. p99:100us")  # fmt: skip
    b = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(ns|us|ms|s)", m.group(2).strip())
    if b is None or float(b.group(1)) <= 0:
        raise UsageError(f"bad --max-latency '{text}'", "a bound above 0 in ns, us, ms or s",
                         "give e.g. p99:100us")  # fmt: skip
    return LatencyBound(p, float(b.group(1)) * _NS[b.group(2)])


_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class SearchSpec:
    goals: tuple[Goal, ...]
    min_load_pps: float
    max_load_pps: float
    time_cap_s: float = TIME_CAP_S
    # a search restarted with its max load lowered to the generator's reach on this host
    # (``run``): how many times, and the reach (None: the max load as given or probed)
    epoch: int = 0
    reach_pps: float | None = None
    # --max-latency: a load meets a goal only when this percentile of each trial's
    # one-way latency is at or below the bound too (None: loss alone)
    max_latency: LatencyBound | None = None
    # --latency (or --max-latency): each trial keeps its one-way latency histogram
    latency: bool = False

    @property
    def keeps_latency(self) -> bool:
        return self.latency or self.max_latency is not None

    def validate(self) -> None:
        if not self.goals:
            raise UsageError("no goal", "a search needs at least one", "e.g. --goal ndr")
        for g in self.goals:
            g.validate()
        keys = [g.key for g in self.goals]
        if len(set(keys)) != len(keys):
            raise UsageError(
                f"goals repeat ({', '.join(keys)})", "each loss ratio once", "drop the repeat"
            )
        lo, hi = self.min_load_pps, self.max_load_pps
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
            raise UsageError(
                f"bad load range: min {fmt_rate(lo)}, max {fmt_rate(hi)}",
                "the min load must be positive and below the max load",
                "fix --min-load / --max-load",
            )
        one = min(g.initial_trial_duration_s for g in self.goals)
        need = one + TRIAL_OVERHEAD_S
        if not math.isfinite(self.time_cap_s) or self.time_cap_s < need:
            raise UsageError(
                f"--time-cap {self.time_cap_s:g}s is too short",
                f"one trial takes about {need:g} s with its overhead",
                "give a longer cap (CSIT's is 20m)",
            )

    def mlr_config(self) -> Config:
        """The MLRsearch Config. No warm-up trial; the time cap is kept by the engine
        (before each trial), MLRsearch's own limit is only a backstop."""
        from MLRsearch import Config  # deferred: MLRsearch, only a search needs it

        cfg = Config()
        cfg.goals = [g.to_mlr() for g in self.goals]
        cfg.min_load = self.min_load_pps  # below the default max (1e9): set first
        cfg.max_load = self.max_load_pps
        cfg.search_duration_max = self.time_cap_s * 2 + 600
        cfg.warmup_duration = None
        return cfg

    def to_json(self) -> dict[str, Any]:
        return {
            "goals": [asdict(g) for g in self.goals],
            "min_load_pps": self.min_load_pps,
            "max_load_pps": self.max_load_pps,
            "time_cap_s": self.time_cap_s,
            "mlrsearch": MLRSEARCH_VERSION,
            **({"epoch": self.epoch} if self.epoch else {}),
            **({"generator_reach_pps": self.reach_pps} if self.reach_pps else {}),
            **({"max_latency": asdict(self.max_latency)} if self.max_latency else {}),
            **({"latency": True} if self.latency else {}),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> SearchSpec:
        return SearchSpec(
            tuple(Goal(**g) for g in d["goals"]),
            float(d["min_load_pps"]),
            float(d["max_load_pps"]),
            float(d.get("time_cap_s", TIME_CAP_S)),
            int(d.get("epoch", 0)),
            d.get("generator_reach_pps"),
            LatencyBound(**d["max_latency"]) if d.get("max_latency") else None,
            bool(d.get("latency", False)),
        )


def parse_ratio(text: str, what: str) -> float:
    """'0.005' or '0.5%' -> 0.005."""
    t = str(text).strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise UsageError(
            f"bad {what} '{text}'", "not a number", "write e.g. 0.005 or 0.5%"
        ) from None
    if not math.isfinite(value):
        raise UsageError(f"bad {what} '{text}'", "not a finite number", "write e.g. 0.005")
    return value


def parse_goal(text: str) -> float:
    """'ndr' -> 0.0; 'pdr' -> 0.005; 'pdr:0.01' or 'pdr:1%' -> 0.01 (the loss ratio):
    ``params.goal_ratio``, soak's parser too."""
    return goal_ratio(text)


@dataclass(frozen=True)
class GoalOptions:
    """The goal flags as given (None: CSIT's default)."""

    goals: tuple[str, ...] = ()
    exceed_ratio: float | None = None
    width: float | None = None
    initial_duration_s: float | None = None
    final_duration_s: float | None = None
    duration_sum_s: float | None = None


def make_goals(opt: GoalOptions) -> tuple[Goal, ...]:
    """The goals, each with the shared flags; validated."""
    base = Goal(0.0)
    given = {
        "exceed_ratio": opt.exceed_ratio,
        "relative_width": opt.width,
        "initial_trial_duration_s": opt.initial_duration_s,
        "final_trial_duration_s": opt.final_duration_s,
        "duration_sum_s": opt.duration_sum_s,
    }
    over: dict[str, float] = {k: v for k, v in given.items() if v is not None}
    if "final_trial_duration_s" in over and "initial_trial_duration_s" not in over:
        over["initial_trial_duration_s"] = min(1.0, over["final_trial_duration_s"])
    if "initial_trial_duration_s" in over and "final_trial_duration_s" not in over:
        over["final_trial_duration_s"] = max(1.0, over["initial_trial_duration_s"])
    if "duration_sum_s" not in over and over.get("final_trial_duration_s", 1.0) > 21.0:
        over["duration_sum_s"] = over["final_trial_duration_s"]
    base = replace(base, **over)
    goals = tuple(replace(base, loss_ratio=parse_goal(g)) for g in (opt.goals or DEFAULT_GOALS))
    for g in goals:
        g.validate()
    return goals


def verify_goal(goals: tuple[Goal, ...]) -> Goal | None:
    """The goal a PASTRAMI sweep verifies: PDR@0.5% when searched, else the smallest
    positive loss ratio (the verdict is on a PDR; NDR alone has none)."""
    pdrs = [g for g in goals if g.loss_ratio > 0]
    for g in pdrs:
        if g.loss_ratio == 0.005:
            return g
    return min(pdrs, key=lambda g: g.loss_ratio) if pdrs else None
