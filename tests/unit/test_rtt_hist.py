"""The RTT histogram: bins, exact moments, percentiles within a bin, storage, merging."""

from __future__ import annotations

import numpy as np
import pytest

from netassay import hist


def test_bins_are_exact_below_2048_ns_and_within_0_1_percent_above():
    v = np.array([0, 1, 2047, 2048, 2049, 4095, 4096, 10**6, 10**9, 2**41 - 1], dtype=np.int64)
    idx = hist.bin_of(v)
    lo, width = hist.bin_lower(idx), hist.bin_width(idx)
    assert (lo <= v).all() and (v < lo + width).all()
    assert idx[:3].tolist() == [0, 1, 2047] and (width[:3] == 1).all()
    assert (width[3:] / v[3:] <= 2**-10 + 1e-12).all()  # 0.1%
    assert idx.max() < hist.NBINS


def test_powers_of_two_land_at_the_start_of_their_octave():
    e = np.arange(11, 41)
    v = np.int64(1) << e
    assert (hist.bin_lower(hist.bin_of(v)) == v).all()
    assert (hist.bin_of(v - 1) == hist.bin_of(v) - 1).all()  # the last bin of the octave below


def test_every_bin_round_trips():
    idx = np.arange(hist.NBINS)
    assert (hist.bin_of(hist.bin_lower(idx)) == idx).all()
    top = hist.bin_lower(idx) + hist.bin_width(idx) - 1
    assert (hist.bin_of(top) == idx).all()


def test_moments_are_exact_and_percentiles_within_a_bin():
    rng = np.random.default_rng(1)
    v = rng.lognormal(np.log(20_000), 0.5, 100_000).astype(np.int64)
    h = hist.Hist()
    for part in np.array_split(v, 7):
        h.add(part)
    s = h.summary()
    assert s["n"] == v.size and s["min_ns"] == v.min() and s["max_ns"] == v.max()
    assert s["mean_ns"] == pytest.approx(v.mean(), rel=1e-12)
    assert s["std_ns"] == pytest.approx(v.std(ddof=1), rel=1e-9)
    for p, key in ((50, "p50_ns"), (90, "p90_ns"), (99, "p99_ns"), (99.9, "p999_ns")):
        exact = np.sort(v)[int(np.ceil(p / 100 * v.size)) - 1]
        assert abs(s[key] - exact) <= exact * 2**-10 + 1


def test_small_samples_are_exact():
    h = hist.Hist()
    h.add(np.array([5, 1, 3, 2, 4]))
    assert h.percentile(50) == 3 and h.percentile(100) == 5 and h.percentile(1) == 1


def test_negative_values_are_kept_and_counted():
    h = hist.Hist()
    h.add(np.array([-300, -5, 10, 20]))
    assert h.negative == 2 and h.min == -300 and h.max == 20
    assert h.percentile(25) == -300 and h.percentile(50) == -5 and h.percentile(75) == 10


def test_merge_equals_one_histogram_of_everything():
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 10**7, 5000), rng.integers(-10, 10**5, 3000)
    one, two, other = hist.Hist(), hist.Hist(), hist.Hist()
    one.add(np.concatenate([a, b]))
    two.add(a)
    other.add(b)
    two.merge(other)
    assert (one.pos == two.pos).all() and (one.neg == two.neg).all()
    assert one.summary() == pytest.approx(two.summary())


def test_storage_round_trip_is_small():
    rng = np.random.default_rng(3)
    h = hist.Hist()
    h.add(rng.normal(50_000, 2_000, 1_000_000).astype(np.int64))
    data = h.to_bytes()
    assert len(data) < 20_000
    back = hist.Hist.from_bytes(data)
    assert (back.pos == h.pos).all() and back.summary() == h.summary()
    empty = hist.Hist.from_bytes(hist.Hist().to_bytes())
    assert empty.n == 0 and empty.summary()["p50_ns"] is None
