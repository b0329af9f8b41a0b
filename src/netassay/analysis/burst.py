"""Back-to-back frames (RFC 2544 section 26.4, as RFC 9004 updates it): the longest
burst at the top rate the SUT forwards without losing a frame, and the buffer time it
implies. Pure: the search is fed each trial's outcome, the summary the lengths found.

One *test* is a binary search on the burst length: a burst of N frames at rate R either
lost nothing (N is a lower bound) or lost some (an upper bound); the search starts at
the longest burst allowed and halves the interval until it is narrower than the
resolution. The test's result is the longest lossless burst measured. The benchmark is
the mean over the tests (50 by the RFC), with the minimum, maximum, standard deviation
and a Student-t 95% confidence interval.

RFC 9004, section 5.4: the implied buffer time is the mean burst over the rate
(B / R); the corrected one takes out the frames the SUT forwarded while the burst came
in, at its throughput T: B / R x (1 - T / R). Times the rate, it is the burst the SUT
held: its buffer in frames.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from netassay.analysis.latency import ci_half_width


@dataclass
class LengthSearch:
    """One test's binary search on the burst length, in frames: ``lo`` the longest burst
    that lost nothing so far (0: none yet), ``hi`` the shortest that lost frames
    (``max_frames + 1``: none yet)."""

    max_frames: int
    resolution: float = 0.01  # done when hi - lo <= resolution x hi (and at 1 frame)
    min_frames: int = 1
    lo: int = 0
    hi: int = 0
    tried: list[tuple[int, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.hi = self.max_frames + 1

    def next_length(self) -> int | None:
        """The next burst to send, or None when the search is done."""
        if not self.tried:
            return self.max_frames
        if self.lo >= self.max_frames or self.hi <= self.min_frames:
            return None
        if self.hi - self.lo <= max(1, math.floor(self.resolution * self.hi)):
            return None
        return max(self.min_frames, (self.lo + self.hi) // 2)

    def record(self, length: int, lossless: bool) -> None:
        self.tried.append((length, lossless))
        if lossless:
            self.lo = max(self.lo, length)
        else:
            self.hi = min(self.hi, length)

    @property
    def done(self) -> bool:
        return self.next_length() is None

    @property
    def result(self) -> int:
        """The longest burst measured without loss (0: even the shortest lost frames)."""
        return self.lo

    @property
    def at_limit(self) -> bool:
        """Every burst up to the longest allowed was forwarded whole: the result is a
        floor, not the SUT's limit (raise the longest burst)."""
        return self.lo >= self.max_frames


@dataclass(frozen=True)
class BurstBenchmark:
    """The benchmark over a back-to-back test's tests (``summary``): their count, the
    bursts' rate, the SUT's throughput, the longest burst allowed and how many tests
    reached it; the mean, min, max, standard deviation and 95% CI of the longest
    lossless burst (None: no test found one); RFC 9004's implied and corrected buffer
    time, and the frames the SUT buffered (None: no mean, or no throughput)."""

    tests: int
    rate_pps: float
    throughput_pps: float | None
    max_frames: int
    at_limit: int
    mean_frames: float | None
    min_frames: int | None
    max_found_frames: int | None
    std_frames: float | None
    ci95_frames: float | None
    implied_buffer_s: float | None
    corrected_buffer_s: float | None
    buffered_frames: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summary(
    lengths: Sequence[int], rate_pps: float, throughput_pps: float | None, max_frames: int
) -> BurstBenchmark:
    """The benchmark over the tests' longest lossless bursts (``lengths``, frames) sent
    at ``rate_pps``: mean, min, max, standard deviation, 95% CI, and RFC 9004's implied
    and (with the SUT's ``throughput_pps``) corrected buffer time and buffered frames."""
    mean = statistics.fmean(lengths) if lengths else None
    corrected = None
    if mean is not None and throughput_pps is not None:
        corrected = corrected_buffer_s(mean, rate_pps, throughput_pps)
    return BurstBenchmark(
        tests=len(lengths), rate_pps=rate_pps, throughput_pps=throughput_pps,
        max_frames=max_frames, at_limit=sum(1 for n in lengths if n >= max_frames),
        mean_frames=mean, min_frames=min(lengths) if lengths else None,
        max_found_frames=max(lengths) if lengths else None,
        std_frames=statistics.stdev(lengths) if len(lengths) > 1 else None,
        ci95_frames=ci_half_width([float(n) for n in lengths]),
        implied_buffer_s=None if mean is None else mean / rate_pps,
        corrected_buffer_s=corrected,
        buffered_frames=None if corrected is None else corrected * rate_pps,
    )  # fmt: skip


def corrected_buffer_s(mean_frames: float, rate_pps: float, throughput_pps: float) -> float:
    """RFC 9004's corrected DUT buffer time: the implied time (mean / rate) less the
    share of the burst the SUT forwarded while it came in (throughput / rate); none
    below 0 (a throughput at or above the burst's rate needs no buffer)."""
    implied = mean_frames / rate_pps
    return max(0.0, implied - implied * throughput_pps / rate_pps)
