"""What a search looks for, as the user asked for it: its goals and the flags they share,
the load range, the time cap, and the PASTRAMI sweep that may verify what it found.
Each field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netassay.errors import UsageError
from netassay.loads import RateFlags, check_load
from netassay.params import (
    DURATION,
    GOAL_SYNTAX,
    PAUSE,
    as_text,
    flag,
    fraction,
    goal_check,
    param,
    tagged,
    whole,
)
from netassay.shared.search_spec import (
    Goal,
    GoalOptions,
    make_goals,
    parse_max_latency,
    parse_ratio,
)
from netassay.units import parse_duration, parse_pause, parse_rate

_RATE = as_text(parse_rate)
_DUR = as_text(parse_duration)


def _goals(v: Any) -> tuple[str, ...]:
    """A campaign file's goal or goals (ndr, pdr, pdr:R), each checked as --goal is."""
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items or not all(isinstance(g, str) for g in items):
        raise ValueError(f"expected a goal or a list of goals: {GOAL_SYNTAX}")
    for g in items:
        goal_check()(g)
    return tuple(items)


tagged(_goals, "GOAL")


def _latency_text(v: Any) -> str:
    """--max-latency as given, checked (its bound is parsed when the search starts)."""
    parse_max_latency(v)
    return str(v).strip().lower()


def _latency_bound(v: Any) -> str:
    """A file's --max-latency, checked and kept as written."""
    try:
        parse_max_latency(v)
    except UsageError as exc:
        raise ValueError(exc.why) from exc
    return str(v)


def _goal_list(v: Any) -> tuple[str, ...]:
    return tuple([v] if isinstance(v, str) else v)


# the run options its command takes (methods.base.RunOptions)
RETRIES = 4  # more than a sweep's 2: a search cannot go on without the answer
# what a --bidirectional search says of its loads before its trials
BOTH = (
    "--bidirectional: each load, bound and count is both directions' sum (FD.io CSIT's "
    "aggregate), the load per direction half of it"
)
RUN_OPTIONS = (
    "db", "name", "label", "retries", "check_peak", "resume", "experiment", "testbed",
    "hook_before", "hook_after",
)  # fmt: skip


@dataclass(frozen=True)
class SearchRequest:
    """The search's goals, range and verify sweep (units parsed; None: the default the
    search derives, e.g. the max load from the generator's peak)."""

    goals: tuple[str, ...] = param(
        "--goal", f"A goal: {GOAL_SYNTAX}; repeat for several (the same syntax as soak's "
        "--goal). Without it: ndr and pdr:0.005.", default=(),
        cli=list, parse=_goal_list, check=_goals, key="goals",
    )  # fmt: skip
    min_load_pps: float | None = param(
        "--min-load", "Lowest load tried [1% of the max]: frames/s, bit/s at --layer or a "
        "share of the line rate.", default=None, parse=_RATE, check=check_load("--min-load"),
        ordinal=True, load="one",
    )  # fmt: skip
    max_load_pps: float | None = param(
        "--max-load", "Highest load tried, e.g. 600k or 400Mbps [98% of the generator's "
        "peak].", default=None, parse=_RATE, check=check_load("--max-load"), ordinal=True,
        load="one",
    )  # fmt: skip
    exceed_ratio: float | None = param(
        "--exceed-ratio", "Share of trial time above the goal loss at a lower bound.",
        default=None, cli=float, check=fraction(0.0, 1.0), ordinal=True,
    )  # fmt: skip
    width: float | None = param(
        "--width", "Relative width of the final bounds [0.5%].", default=None,
        parse=lambda v: parse_ratio(v, "--width"), check=fraction(0.0, 1.0), ordinal=True,
    )  # fmt: skip
    initial_duration_s: float | None = param(
        "--initial-duration", "Shortest trial [1s].", default=None, parse=_DUR,
        check=DURATION, ordinal=True,
    )  # fmt: skip
    final_duration_s: float | None = param(
        "--final-duration", "Longest (full-length) trial [1s].", default=None, parse=_DUR,
        check=DURATION, ordinal=True,
    )  # fmt: skip
    duration_sum_s: float | None = param(
        "--duration-sum", "Trial time that classifies a load [21s].", default=None,
        parse=_DUR, check=DURATION, ordinal=True,
    )  # fmt: skip
    time_cap_s: float | None = param(  # None: CSIT's (TIME_CAP_S), or a resumed search's own
        "--time-cap", "Stop the search after this long [20m].", default=None, parse=_DUR,
        check=DURATION, ordinal=True,
    )  # fmt: skip
    settle_s: float = param(
        "--settle", "Pause between trials [0].", default=0.0, parse=as_text(parse_pause),
        check=PAUSE, ordinal=True,
    )  # fmt: skip
    then_verify: bool = param(
        "--then-verify", "Then a PASTRAMI sweep around the PDR found, and its verdict.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    verify_runs: int = param(
        "--verify-runs", "K of the verify sweep.", default=5, cli=int, check=whole(2, 100),
        ordinal=True,
    )  # fmt: skip
    verify_duration_s: float | None = param(
        "--verify-duration", "Trial length of the verify sweep [final].", default=None,
        parse=_DUR, check=DURATION, ordinal=True,
    )  # fmt: skip
    verify_span: float = param(
        "--verify-span", "Verify loads from (1-span) to (1+span) x the PDR.", default=0.2,
        cli=float, check=fraction(0.0, 1.0), ordinal=True,
    )  # fmt: skip
    verify_loads: int = param(
        "--verify-loads", "Loads of the verify sweep.", default=9, cli=int,
        check=whole(4, 50), ordinal=True,
    )  # fmt: skip
    bidirectional: bool = param(
        "--bidirectional",
        "Both directions at once in every trial (and the verify sweep's): a generator and "
        "an XDP sink at each end, as sweep --bidirectional; the loads and the PDR and NDR "
        "found are both directions' sum (FD.io CSIT's aggregate), each direction half.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    max_latency: str | None = param(
        "--max-latency",
        "pP:BOUND, e.g. p99:100us: a load meets a goal only when each trial's P-th "
        "percentile of one-way latency (the XDP sink's histogram) is at or below BOUND as "
        "well as its loss (a trial above it counts as failing every goal); the output says "
        "which bound held at each load.",
        default=None, parse=_latency_text, check=_latency_bound, metavar="pP:BOUND",
    )  # fmt: skip
    latency: bool = param(
        "--latency",
        "Keep each trial's one-way latency histogram (the XDP sink's), as sweep --latency: "
        "the result gives the latency at each goal's lower bound (p50, p99, max over the "
        "trials at that load). Implied by --max-latency.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    # --layer and --line-rate: how loads in bit/s or shares are read (shared.rates)
    read_as: RateFlags = field(default_factory=RateFlags, metadata={"nested": RateFlags})

    def goal_options(self) -> GoalOptions:
        return GoalOptions(
            self.goals, self.exceed_ratio, self.width, self.initial_duration_s,
            self.final_duration_s, self.duration_sum_s,
        )  # fmt: skip

    def make_goals(self) -> tuple[Goal, ...]:
        return make_goals(self.goal_options())

    def line_loads(self) -> tuple[tuple[float, ...] | None, str]:
        """The load a --testbed's ports must carry, and its flag (``invoke.resolve``):
        --max-load, each port carrying half of it with --bidirectional."""
        if self.max_load_pps is None:
            return None, "--max-load"
        return (self.max_load_pps * (0.5 if self.bidirectional else 1.0),), "--max-load"

    def given_goal_flags(self) -> list[str]:
        """The goal and range flags this request sets (a resume refuses them)."""
        set_ = (
            ("--goal", self.goals), ("--exceed-ratio", self.exceed_ratio),
            ("--width", self.width), ("--initial-duration", self.initial_duration_s),
            ("--final-duration", self.final_duration_s),
            ("--duration-sum", self.duration_sum_s), ("--min-load", self.min_load_pps),
            ("--max-load", self.max_load_pps), ("--bidirectional", self.bidirectional),
            ("--max-latency", self.max_latency), ("--latency", self.latency),
        )  # fmt: skip
        return [flag_ for flag_, value in set_ if value]
