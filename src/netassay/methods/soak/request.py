"""What a soak asks for: its load (a rate, or a share of the PDR a stored search found),
how long, in segments of what length, and the goal loss ratio it is judged against.
Each field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from netassay.errors import NetassayError, UsageError
from netassay.loads import RateFlags, check_load, written
from netassay.params import (
    DURATION,
    GOAL_SYNTAX,
    as_text,
    flag,
    goal_check,
    goal_ratio,
    param,
    tagged,
)
from netassay.shared import throughput
from netassay.units import parse_duration

RETRIES = 2  # a faulty segment is repeated as a sweep's trial is
MAX_DURATION_S = 7 * 24 * 3600.0
MIN_SEGMENT_S = 1.0  # a segment is read every second: at least one
MAX_SEGMENTS = 100_000
RUN_OPTIONS = (
    "db", "name", "label", "retries", "check_peak", "resume", "experiment", "testbed",
    "hook_before", "hook_after",
)  # fmt: skip


def parse_load(text: Any) -> str:
    """``--rate``: a rate ('200k') or a share of the stored PDR ('90%pdr'), checked and
    kept as written (the PDR is looked up in the store when the soak starts)."""
    return throughput.parse("--rate", text, words=())


def _check_rate(v: Any) -> Any:
    """A config file's rate: one load (200k, 500Mbps, 50%) or a share of the PDR."""
    if written(v):
        return check_load("--rate")(v)
    try:
        return as_text(parse_load)(v)
    except NetassayError as exc:
        raise ValueError(exc.why or exc.what) from exc


def pdr_share(load: str) -> float | None:
    """The share of the PDR ``load`` asks for (0.9 for '90%pdr'), None for a rate."""
    m = throughput.PDR_SHARE.fullmatch(load)
    return float(m.group(1)) / 100 if m else None


def parse_goal(text: Any) -> float:
    """``--goal``: search's goal syntax ('ndr', 'pdr', 'pdr:0.5%'), or the ratio alone
    ('0.005', '0.5%'): ``params.goal_ratio``."""
    return goal_ratio(text, bare=True)


def _goal_value(v: Any) -> float:
    """A config file's goal as its ratio (ValueError saying why not)."""
    goal_check(bare=True)(v)
    return goal_ratio(v, bare=True)


tagged(_goal_value, "GOAL")


@dataclass(frozen=True)
class SoakRequest:
    """One soak: ``rate`` for ``duration_s`` in segments of ``segment_s``, judged
    against ``goal`` (a loss ratio)."""

    # --resume continues the stored load, segments, goal and label: one given is refused
    RESUME_KEEPS_PLAN: ClassVar[str] = "soak"
    rate: str | None = param(
        "--rate", "Load: a rate (200k, or 500Mbps at --layer, or 50% of the line rate) or a "
        "share of the newest stored search's PDR (90%pdr, from --db).", default=None,
        parse=as_text(parse_load), check=_check_rate, campaign=False, load="one",
        metavar="RATE",
    )  # fmt: skip
    duration_s: float = param(
        "--duration", "Length of the whole soak, e.g. 30m.", default=60.0,
        parse=as_text(parse_duration), check=DURATION, ordinal=True, show="60s",
    )  # fmt: skip
    segment_s: float = param(
        "--segment-length", "Length of each stored segment (the last one is shorter when "
        "the duration is not a multiple).", default=10.0, parse=as_text(parse_duration),
        check=DURATION, ordinal=True, show="10s", old=("--segment",),
        what="the length of each stored segment",
    )  # fmt: skip
    goal: float = param(
        "--goal", f"Goal loss ratio over the whole soak, written as search's --goal: "
        f"{GOAL_SYNTAX}; or R alone (0.005, 0.5%), the same goal as pdr:R.",
        default=0.005, parse=parse_goal, check=_goal_value, show="0.005",
    )  # fmt: skip
    bidirectional: bool = param(
        "--bidirectional",
        "Both directions at once, as sweep --bidirectional: --rate is each direction's "
        "load; the totals, loss and verdict are both directions' sum (FD.io CSIT's "
        "aggregate), each direction's kept too. A %pdr load is of a --bidirectional "
        "search's PDR, halved.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    # --layer and --line-rate: how loads in bit/s or shares are read (shared.rates)
    read_as: RateFlags = field(default_factory=RateFlags, metadata={"nested": RateFlags})

    def validate(self) -> None:
        """Refuse what makes no sense before anything is touched."""
        if self.rate is None:
            raise UsageError("--rate is required", "the load the soak holds",
                             "give e.g. --rate 200k or --rate 90%pdr")  # fmt: skip
        if self.duration_s > MAX_DURATION_S:
            raise UsageError(f"--duration {self.duration_s:g}s is too long", "at most 7 days",
                             "give a shorter --duration")  # fmt: skip
        if self.segment_s < MIN_SEGMENT_S:
            raise UsageError(f"--segment-length {self.segment_s:g}s is too short",
                             "a segment is read every second", "give at least 1s")  # fmt: skip
        if self.segment_s > self.duration_s:
            raise UsageError(f"--segment-length {self.segment_s:g}s is longer than --duration "
                             f"{self.duration_s:g}s", "a soak is one or more segments",
                             "give a shorter --segment-length")  # fmt: skip
        if self.duration_s / self.segment_s > MAX_SEGMENTS:
            raise UsageError("too many segments", f"at most {MAX_SEGMENTS}",
                             "give a longer --segment-length")  # fmt: skip
