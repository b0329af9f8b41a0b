"""System recovery (RFC 2544 section 26.5): after an overload at 110% of the SUT's
throughput, the load drops to half of it (55%); how long until the SUT forwards what
it is offered again. Pure: it reads the sink's count sampled at short intervals.

The sink's count is read every interval while the trial runs, and once right when the
overload's extra generator ended (timestamp A, its last frame's send time). After A
the offered load is known exactly (the one generator left, paced); an interval is
*clean* when the frames the sink counted in it are the frames offered in it, within
``TOLERANCE_SHARE`` (and ``TOLERANCE_FRAMES``): nothing lost and no backlog still
draining (a queue emptying delivers more than is offered, a loss less). The recovery
time is from A to the start of the first clean interval: the first interval (the first
second, or a finer one) with no loss, to within one interval.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from typing import Any

from netassay.analysis.latency import ci_half_width

TOLERANCE_SHARE = 0.05
TOLERANCE_FRAMES = 3

Sample = tuple[float, int]  # (CLOCK_MONOTONIC s, frames the sink counted so far)


def intervals(samples: Sequence[Sample], t_from: float) -> list[dict[str, float]]:
    """The intervals between consecutive samples from the first at or after ``t_from``:
    start, end (s, monotonic) and the frames counted in each."""
    after = [s for s in samples if s[0] >= t_from]
    return [
        {"start": a[0], "end": b[0], "frames": float(b[1] - a[1])}
        for a, b in itertools.pairwise(after)
        if b[0] > a[0]
    ]


def clean(frames: float, offered: float) -> bool:
    """The sink counted what was offered, within the tolerance."""
    return abs(frames - offered) <= max(TOLERANCE_FRAMES, TOLERANCE_SHARE * offered)


def recovery(samples: Sequence[Sample], t_drop: float, low_pps: float) -> dict[str, Any]:
    """The recovery of one trial: from ``t_drop`` (A) to the first clean interval at
    ``low_pps`` offered; ``recovery_s`` None when no interval after A is clean (the SUT
    did not recover within the trial). With the intervals after A (s from A, frames
    counted, offered) for the figure."""
    rows = intervals(samples, t_drop)
    found = next((r for r in rows if clean(r["frames"], low_pps * (r["end"] - r["start"]))), None)
    return {
        "recovery_s": None if found is None else max(0.0, found["start"] - t_drop),
        "intervals_after": len(rows),
        "after": [
            [round(r["start"] - t_drop, 6), round(r["end"] - r["start"], 6), int(r["frames"])]
            for r in rows
        ],
    }


def summary(times: Sequence[float | None]) -> dict[str, Any]:
    """Over the trials: how many recovered, the mean recovery time, its 95% CI, min, max."""
    got = [t for t in times if t is not None]
    return {
        "trials": len(times),
        "recovered": len(got),
        "mean_s": statistics.fmean(got) if got else None,
        "ci95_s": ci_half_width(got),
        "min_s": min(got) if got else None,
        "max_s": max(got) if got else None,
    }
