"""A compact log-linear histogram of nanosecond values (HDR-like), with exact moments;
and ``SinkHist``, the XDP sink's in-kernel latency histogram as it reads it.

Values below 2**11 ns get a bin each (1 ns); above, every octave [2**e, 2**(e+1)) is
split into 1024 equal bins, so a bin is at most 0.1% of its value wide (1 us at 1 ms).
Values up to 2**41 ns (36 minutes) fit; larger ones go to the last bin. Negative values
(which a correct capture never yields, but which must be seen when it does) are kept in
a mirrored histogram. Count, minimum, maximum, mean and standard deviation are exact
(Chan's parallel update of the mean and the sum of squared deviations); percentiles are
the midpoint of the bin holding the nearest-rank value, clamped to [min, max].

Memory does not grow with the number of values: 2 x 32768 counters. Stored sparse
(non-zero bins only) and compressed.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Callable
from typing import Any, Literal, TypedDict

import numpy as np

B = 11  # linear bins below 2**B ns; 2**(B-1) bins per octave above
HALF = 1 << (B - 1)
MAX_EXP = 41  # octaves B .. MAX_EXP - 1
NBINS = (1 << B) + (MAX_EXP - B) * HALF  # 32768


# a figure of a histogram's summary in ns, by its key (``Hist.summary``)
Figure = Literal["min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "mean_ns"]


class Quantiles(TypedDict):
    """The percentiles a histogram's summary gives, in ns (None: no sample)."""

    p50_ns: float | None
    p90_ns: float | None
    p99_ns: float | None
    p999_ns: float | None


def quantiles(percentile: Callable[[float], float | None]) -> Quantiles:
    """p50, p90, p99 and p99.9 by a histogram's ``percentile``."""
    return {
        "p50_ns": percentile(50.0), "p90_ns": percentile(90.0),
        "p99_ns": percentile(99.0), "p999_ns": percentile(99.9),
    }  # fmt: skip


class Percentiles(Quantiles):
    """A histogram's figures in ns (None: it holds no sample) and its count."""

    n: int
    min_ns: int | None
    max_ns: int | None
    mean_ns: float | None


class HistSummary(Percentiles):
    """``Hist.summary``: with the spread and the samples below zero."""

    std_ns: float | None
    negative: int


class SinkHistSummary(Percentiles):
    """``SinkHist.summary``: with the frames that arrived ahead of their send time."""

    ahead: int


def figure(summary: HistSummary | None, key: Figure) -> float | None:
    """One figure of a summary (None: no summary, or no sample)."""
    v = None if summary is None else summary.get(key)
    return None if v is None else float(v)


def bin_of(values: np.ndarray) -> np.ndarray:
    """The bin index of each non-negative value (int64 ns)."""
    v = np.asarray(values, dtype=np.int64)
    out = v.copy()
    big = v >= (1 << B)
    if big.any():
        w = v[big]
        e = np.floor(np.log2(w.astype(np.float64))).astype(np.int64)
        # float log2 can be off by one at exact powers of two: fix it with integers
        e = np.where((np.int64(1) << e) > w, e - 1, e)
        e = np.where((np.int64(1) << (e + 1)) <= w, e + 1, e)
        e = np.minimum(e, MAX_EXP - 1)
        s = e - B + 1
        sub = np.minimum(w >> s, (1 << B) - 1) - HALF
        out[big] = (1 << B) + (e - B) * HALF + sub
    return out


def bin_lower(idx: np.ndarray) -> np.ndarray:
    """The smallest value of each bin (int64 ns)."""
    i = np.asarray(idx, dtype=np.int64)
    out = i.copy()
    big = i >= (1 << B)
    o = (i[big] - (1 << B)) // HALF
    j = (i[big] - (1 << B)) % HALF
    out[big] = (HALF + j) << (o + 1)
    return out


def bin_width(idx: np.ndarray) -> np.ndarray:
    i = np.asarray(idx, dtype=np.int64)
    o = np.maximum(i - (1 << B), 0) // HALF
    return np.where(i >= (1 << B), np.int64(1) << (o + 1), 1)


def bin_mid(idx: np.ndarray) -> np.ndarray:
    """A bin's representative value: its midpoint (exact below 2**B ns)."""
    return bin_lower(idx) + (bin_width(idx) - 1) / 2.0


class Hist:
    """Counts of int64 nanosecond values; ``add`` takes arrays, ``merge`` another Hist."""

    def __init__(self) -> None:
        self.pos = np.zeros(NBINS, dtype=np.int64)
        self.neg = np.zeros(NBINS, dtype=np.int64)  # bins of -v for v < 0
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0  # sum of squared deviations from the mean
        self.min: int | None = None
        self.max: int | None = None

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.int64)
        if v.size == 0:
            return
        neg = v < 0
        np.add.at(self.pos, bin_of(v[~neg]), 1)
        if neg.any():
            np.add.at(self.neg, bin_of(-v[neg]), 1)
        f = v.astype(np.float64)
        self._moments(int(v.size), float(f.mean()), float(((f - f.mean()) ** 2).sum()))
        lo, hi = int(v.min()), int(v.max())
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)

    def _moments(self, n: int, mean: float, m2: float) -> None:
        total = self.n + n
        delta = mean - self.mean
        self.m2 += m2 + delta * delta * self.n * n / total
        self.mean += delta * n / total
        self.n = total

    def merge(self, other: Hist) -> Hist:
        if other.n == 0:
            return self
        self.pos += other.pos
        self.neg += other.neg
        self._moments(other.n, other.mean, other.m2)
        assert other.min is not None and other.max is not None
        self.min = other.min if self.min is None else min(self.min, other.min)
        self.max = other.max if self.max is None else max(self.max, other.max)
        return self

    @property
    def negative(self) -> int:
        return int(self.neg.sum())

    def std(self) -> float | None:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else None

    def percentile(self, p: float) -> float | None:
        """The nearest-rank p-th percentile (0 < p <= 100), to the bin's precision."""
        if self.n == 0:
            return None
        rank = max(1, math.ceil(p / 100.0 * self.n))
        nneg = self.negative
        if rank <= nneg:  # among the negative values, most negative first
            order = np.cumsum(self.neg[::-1])
            idx = NBINS - 1 - int(np.searchsorted(order, rank))
            value = -float(bin_mid(np.array([idx]))[0])
        else:
            idx = int(np.searchsorted(np.cumsum(self.pos), rank - nneg))
            value = float(bin_mid(np.array([idx]))[0])
        assert self.min is not None and self.max is not None
        return min(max(value, float(self.min)), float(self.max))

    def summary(self) -> HistSummary:
        """min, p50, p90, p99, p99.9, max, mean, std (ns) and the count."""
        return {
            "n": self.n, "min_ns": self.min, **quantiles(self.percentile), "max_ns": self.max,
            "mean_ns": self.mean if self.n else None, "std_ns": self.std(),
            "negative": self.negative,
        }  # fmt: skip

    # -- storage ----------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Sparse and compressed: the non-zero bins and the exact moments."""
        ip, ineg = np.flatnonzero(self.pos), np.flatnonzero(self.neg)
        head = np.array([self.n, len(ip), len(ineg), self.min or 0, self.max or 0], dtype=np.int64)
        buf = io.BytesIO()
        buf.write(head.tobytes())
        buf.write(np.array([self.mean, self.m2], dtype=np.float64).tobytes())
        for idx, counts in ((ip, self.pos), (ineg, self.neg)):
            buf.write(idx.astype(np.uint16).tobytes())
            buf.write(counts[idx].astype(np.int64).tobytes())
        return zlib.compress(buf.getvalue(), 6)

    @classmethod
    def from_bytes(cls, data: bytes) -> Hist:
        raw = zlib.decompress(data)
        h = cls()
        n, npos, nneg, lo, hi = np.frombuffer(raw, dtype=np.int64, count=5)
        off = 40
        h.mean, h.m2 = (float(x) for x in np.frombuffer(raw, np.float64, 2, off))
        off += 16
        for count, arr in ((int(npos), h.pos), (int(nneg), h.neg)):
            idx = np.frombuffer(raw, np.uint16, count, off).astype(np.int64)
            off += 2 * count
            arr[idx] = np.frombuffer(raw, np.int64, count, off)
            off += 8 * count
        h.n = int(n)
        if h.n:
            h.min, h.max = int(lo), int(hi)
        return h


class SinkHist:
    """The XDP sink's one-way latency histogram (``netassay-gen --xdp-sink --latency``):
    buckets the kernel counted, ``[lower_ns, upper_ns, count]`` (1 us wide below 256 us,
    then at most 0.8% of their value, the last one open: upper None), with the exact
    count, sum, minimum and maximum. ``ahead`` counts frames stamped later than they
    arrived (left out). Percentiles are the midpoint of the bucket holding the
    nearest-rank value, clamped to [min, max], as ``Hist`` does."""

    def __init__(self, doc: dict[str, Any] | None = None) -> None:
        doc = doc or {}
        self.n = int(doc.get("n", 0))
        self.sum_ns = int(doc.get("sum_ns", 0))
        self.min_ns = int(doc["min_ns"]) if self.n else None
        self.max_ns = int(doc["max_ns"]) if self.n else None
        self.ahead = int(doc.get("ahead", 0))
        self.buckets: dict[int, tuple[int | None, int]] = {}
        for lo, hi, count in doc.get("buckets", []):
            self.buckets[int(lo)] = (hi, int(count))

    def merge(self, other: SinkHist) -> SinkHist:
        if other.n:
            assert other.min_ns is not None and other.max_ns is not None
            self.min_ns = other.min_ns if self.min_ns is None else min(self.min_ns, other.min_ns)
            self.max_ns = other.max_ns if self.max_ns is None else max(self.max_ns, other.max_ns)
        self.n += other.n
        self.sum_ns += other.sum_ns
        self.ahead += other.ahead
        for lo, (hi, count) in other.buckets.items():
            self.buckets[lo] = (hi, self.buckets.get(lo, (hi, 0))[1] + count)
        return self

    def percentile(self, p: float) -> float | None:
        """The nearest-rank p-th percentile (0 < p <= 100), to the bucket's precision."""
        if self.n == 0:
            return None
        assert self.min_ns is not None and self.max_ns is not None
        rank = max(1, math.ceil(p / 100.0 * self.n))
        seen = 0
        for lo in sorted(self.buckets):
            hi, count = self.buckets[lo]
            seen += count
            if seen >= rank:
                mid = (lo + hi) / 2.0 if hi is not None else float(self.max_ns)
                return min(max(mid, float(self.min_ns)), float(self.max_ns))
        return float(self.max_ns)

    def summary(self) -> SinkHistSummary:
        """n, min, p50, p90, p99, p99.9, max and mean (ns), and the frames ahead."""
        return {
            "n": self.n, "min_ns": self.min_ns, **quantiles(self.percentile),
            "max_ns": self.max_ns, "mean_ns": self.sum_ns / self.n if self.n else None,
            "ahead": self.ahead,
        }  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The shape the sink prints (and a trial stores)."""
        return {
            "n": self.n, "sum_ns": self.sum_ns, "min_ns": self.min_ns or 0,
            "max_ns": self.max_ns or 0, "ahead": self.ahead,
            "buckets": [[lo, *self.buckets[lo]] for lo in sorted(self.buckets)],
        }  # fmt: skip
