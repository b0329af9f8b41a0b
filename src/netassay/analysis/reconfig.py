"""Loss during a reconfiguration, as FD.io CSIT's reconfiguration tests report it: a
load below the SUT's throughput runs while a change is made to it; the frames lost,
and the *effective blocked time*, lost / offered rate: how long the SUT would have
forwarded nothing to lose as many. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from netassay.analysis.latency import ci_half_width


def blocked_s(lost: int, rate_pps: float) -> float:
    """The effective blocked time of ``lost`` frames at ``rate_pps`` offered."""
    return max(0, lost) / rate_pps


@dataclass(frozen=True)
class ReconfigBenchmark:
    """A reconfiguration test's used trials summed up (``summary``): how many, the
    frames lost in all, the mean effective blocked time, its 95% CI, min and max (None:
    no trial)."""

    trials: int
    lost: int
    mean_blocked_s: float | None
    ci95_blocked_s: float | None
    min_blocked_s: float | None
    max_blocked_s: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summary(trials: Sequence[tuple[int, float]]) -> ReconfigBenchmark:
    """Over the trials' (frames lost, offered rate): the mean effective blocked time,
    its 95% CI, min and max, and the frames lost in all."""
    times = [blocked_s(lost, rate) for lost, rate in trials]
    return ReconfigBenchmark(
        trials=len(times),
        lost=sum(max(0, lost) for lost, _ in trials),
        mean_blocked_s=statistics.fmean(times) if times else None,
        ci95_blocked_s=ci_half_width(times),
        min_blocked_s=min(times) if times else None,
        max_blocked_s=max(times) if times else None,
    )
