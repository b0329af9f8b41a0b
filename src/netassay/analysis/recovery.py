"""System recovery (RFC 2544 section 26.5): after an overload at 110% of the SUT's
throughput, the load drops to half of it (55%); how long until the SUT forwards what
it is offered again. Pure: it reads the sink's count sampled at short intervals.

The sink's count is read every interval while the trial runs, and once right when the
overload's extra generator ended (timestamp A, its last frame's send time). After A the
offered load is known exactly (the one generator left, paced), and so is the *deficit*
D(t): the frames offered since A less those the sink counted since A. While a queue
the overload filled drains, the SUT delivers more than is offered and D falls at the
drain rate; while it still loses frames, D rises; once it forwards what it is offered,
D stays where it is. The recovery time is where D stops changing: the breakpoint of a
least-squares fit of D by a line that turns flat (a broken stick), found to a fraction
of the interval however clumpy the sink's count is on a busy host (frames arrive in
batches; a fixed interval's count is noisy, the trend of many is not). No change in D
beyond its noise is a recovery at A (0); a breakpoint in the last tenth of the
recovery phase is none (the SUT had not recovered by its end).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from netassay.analysis.latency import ci_half_width

TOLERANCE_FRAMES = 3  # a deficit that changed by no more (or 3x the fit's noise): none

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


def deficit(samples: Sequence[Sample], t_drop: float, low_pps: float) -> list[tuple[float, float]]:
    """(s from A, frames offered since A less frames counted since A) at each sample
    from the first at or after A."""
    after = [s for s in samples if s[0] >= t_drop]
    if not after:
        return []
    t0, c0 = after[0]
    return [(t - t_drop, low_pps * (t - t0) - (c - c0)) for t, c in after]


def _fit(ts: Sequence[float], ds: Sequence[float], tr: float) -> tuple[float, float, float]:
    """Least squares of D = c + b min(t - tr, 0): (sse, c, b)."""
    xs = [min(t - tr, 0.0) for t in ts]
    n = len(xs)
    sx, sy = sum(xs), sum(ds)
    sxx = sum(x * x for x in xs)
    sxy = sum(x * y for x, y in zip(xs, ds, strict=True))
    den = n * sxx - sx * sx
    b = (n * sxy - sx * sy) / den if den > 0 else 0.0
    c = (sy - b * sx) / n
    sse = sum((y - c - b * x) ** 2 for x, y in zip(xs, ds, strict=True))
    return sse, c, b


def breakpoint(points: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """The broken stick's breakpoint over ``points`` (t, D): (t_r, slope before it,
    residual standard deviation), the breakpoint searched on every sample time and
    every midpoint between two, then every 1/20 of an interval around the best."""
    ts = [t for t, _ in points]
    ds = [d for _, d in points]
    candidates = sorted({*ts, *((a + b) / 2 for a, b in itertools.pairwise(ts))})
    best = min((_fit(ts, ds, tr), tr) for tr in candidates)
    step = (ts[-1] - ts[0]) / max(1, len(ts) - 1)  # then finer, around the best
    fine = [best[1] + step * (k / 20 - 1) for k in range(41)]
    best = min(best, *((_fit(ts, ds, tr), tr) for tr in fine if ts[0] <= tr <= ts[-1]))
    (sse, _, slope), tr = best
    return tr, slope, math.sqrt(sse / max(1, len(ts) - 3))


@dataclass(frozen=True)
class Recovery:
    """One trial's recovery (``recovery``): ``recovery_s`` from A (None: not recovered
    within the samples), the deficit's change before it (``settled_frames``: negative, a
    backlog drained; positive, frames lost) and the fit's noise (None: too few samples
    to fit), the intervals after A and each of them (s from A, length, frames) for the
    figure."""

    recovery_s: float | None
    settled_frames: float | None
    noise_frames: float | None
    intervals_after: int
    after: list[tuple[float, float, int]]

    def to_json(self) -> dict[str, Any]:
        """As a trial's counters store it (the intervals as lists)."""
        return asdict(self)


def recovery(samples: Sequence[Sample], t_drop: float, low_pps: float) -> Recovery:
    """The recovery of one trial after ``t_drop`` (A) at ``low_pps`` offered (see
    ``Recovery``)."""
    rows = intervals(samples, t_drop)
    after = [
        (round(r["start"] - t_drop, 6), round(r["end"] - r["start"], 6), int(r["frames"]))
        for r in rows
    ]
    points = deficit(samples, t_drop, low_pps)
    if len(points) < 4:
        return Recovery(None, None, None, len(rows), after)
    tr, slope, noise = breakpoint(points)
    change = slope * (tr - points[0][0])
    span = points[-1][0] - points[0][0]
    found: float | None = None
    if abs(change) <= max(TOLERANCE_FRAMES, 3 * noise):
        found = 0.0  # D did not change beyond its noise: recovered at A
    elif tr - points[0][0] < 0.9 * span:
        found = max(0.0, tr)
    return Recovery(found, round(change, 1), round(noise, 1), len(rows), after)


@dataclass(frozen=True)
class RecoveryBenchmark:
    """A recovery test's used trials summed up (``summary``): how many, how many
    recovered, the mean recovery time, its 95% CI, min and max (None: none recovered)."""

    trials: int
    recovered: int
    mean_s: float | None
    ci95_s: float | None
    min_s: float | None
    max_s: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summary(times: Sequence[float | None]) -> RecoveryBenchmark:
    """Over the trials: how many recovered, the mean recovery time, its 95% CI, min, max."""
    got = [t for t in times if t is not None]
    return RecoveryBenchmark(
        trials=len(times),
        recovered=len(got),
        mean_s=statistics.fmean(got) if got else None,
        ci95_s=ci_half_width(got),
        min_s=min(got) if got else None,
        max_s=max(got) if got else None,
    )
