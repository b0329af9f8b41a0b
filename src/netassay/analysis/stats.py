"""Per-load statistics of a load-loss curve (PASTRAMI, section IV). Pure functions."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from netassay.errors import InputError

# A mean loss ratio this close to zero is zero up to rounding: 1 - received/sent is
# exact to about one ulp of 1, so the mean of such values carries a few ulps of noise.
ULPS_OF_ONE = 8 * float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class LoadTable:
    """One row per offered load, in increasing load order (columns as numpy arrays)."""

    rate_pps: np.ndarray  # offered load O
    k: np.ndarray  # trials at this load
    plr: np.ndarray  # mean of the per-trial loss ratios (as measured; may be < 0)
    plr_std: np.ndarray  # sample std, ddof 1 (nan when k < 2)
    ucl95: np.ndarray  # PLR + t(K-1, 0.975) * std / sqrt(K) (nan when k < 2)
    delta_ucl95: np.ndarray  # (UCL95 - PLR) / PLR (nan when PLR is <= 0 up to rounding, k < 2)
    throughput_pps: np.ndarray  # T(O) = O * (1 - PLR)
    tir: np.ndarray  # (T_i - T_{i-1}) / (O_i - O_{i-1}); nan at the first load
    plr_max: np.ndarray  # the largest per-trial loss ratio (NDR: <= 0 when no trial lost)

    @property
    def dr(self) -> np.ndarray:
        return 1.0 - self.plr

    def __len__(self) -> int:
        return int(self.rate_pps.size)


def trial_plr(sent: np.ndarray, received: np.ndarray) -> np.ndarray:
    """Per-trial loss ratio 1 - received/sent (negative when received > sent)."""
    sent = np.asarray(sent, dtype=np.float64)
    return 1.0 - np.asarray(received, dtype=np.float64) / sent


@functools.lru_cache(maxsize=4096)
def _t975(df: int) -> float:
    return float(sps.t.ppf(0.975, df))


def t_critical(k: np.ndarray | int) -> np.ndarray:
    """Two-sided 95% Student-t critical value with k - 1 degrees of freedom (nan for k < 2)."""
    k = np.atleast_1d(np.asarray(k, dtype=np.int64))
    return np.array([_t975(int(x) - 1) if x >= 2 else np.nan for x in k], dtype=np.float64)


def tir(rate_pps: np.ndarray, throughput_pps: np.ndarray) -> np.ndarray:
    """Throughput Increase Ratio between consecutive loads; nan at index 0."""
    out = np.full(rate_pps.shape, np.nan)
    if rate_pps.size > 1:
        out[1:] = np.diff(throughput_pps) / np.diff(rate_pps)
    return out


def check_increasing(rate_pps: np.ndarray) -> None:
    """Raise InputError unless the known offered loads increase strictly with the index.

    Duplicate or unsorted loads are rejected, not merged: two load indices at one rate
    are two measurements (perhaps taken under other conditions, e.g. a resumed sweep),
    and pooling them would change K silently and break "row i is load index i of the
    plan"; sorting them would break it too. TIR divides by the step between consecutive
    loads, so at a repeat it is infinite and on an unsorted list its sign is wrong.
    """
    idx = np.flatnonzero(np.isfinite(rate_pps))
    r = rate_pps[idx]
    bad = np.flatnonzero(np.diff(r) <= 0)
    if not bad.size:
        return
    from netassay.units import fmt_rate

    i, j = int(idx[bad[0]]), int(idx[bad[0] + 1])
    how = "repeats" if rate_pps[j] == rate_pps[i] else "is below"
    raise InputError(
        f"load {j} ({fmt_rate(rate_pps[j])}) {how} load {i} ({fmt_rate(rate_pps[i])})",
        "offered loads must increase strictly: TIR divides by the step between consecutive "
        "loads, which is zero at a repeated load and negative on an unsorted list, so "
        "duplicates are rejected rather than merged",
        "measure each load once, in increasing order (sort and deduplicate the rate list)",
    )


def load_table(
    load_index: np.ndarray,
    rate_pps: np.ndarray,
    plr: np.ndarray,
    *,
    sent: np.ndarray | None = None,
) -> LoadTable:
    """Aggregate per-trial loss ratios into per-load statistics.

    ``load_index`` must be sorted (trials grouped by load); ``rate_pps`` is the
    offered load of each trial; the loads must increase strictly (InputError).
    ``sent`` (per trial) gives the resolution below which a mean loss ratio is zero up
    to rounding: half a packet over the load's trials, i.e. |PLR| < 0.5 / (K * max
    sent), or a few ulps; such a load has no Delta_UCL95.
    Vectorized: cost is linear in the number of trials.
    """
    load_index = np.asarray(load_index)
    plr = np.asarray(plr, dtype=np.float64)
    if load_index.size == 0:
        empty = np.empty(0)
        return LoadTable(empty, empty.astype(np.int64), *(empty,) * 7)
    starts = np.flatnonzero(np.r_[True, load_index[1:] != load_index[:-1]])
    k = np.diff(np.r_[starts, load_index.size])
    rates = np.asarray(rate_pps, dtype=np.float64)[starts]
    check_increasing(rates)
    sums = np.add.reduceat(plr, starts)
    mean = sums / k
    dev = plr - np.repeat(mean, k)
    ss = np.add.reduceat(dev * dev, starts)
    top = np.maximum.reduceat(plr, starts)
    smax = np.full(k.size, np.nan)
    if sent is not None:
        smax = np.maximum.reduceat(np.asarray(sent, dtype=np.float64), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.where(k >= 2, np.sqrt(ss / np.maximum(k - 1, 1)), np.nan)
        ucl = mean + t_critical(k) * std / np.sqrt(k)
        tol = np.fmax(0.5 / (k * smax), ULPS_OF_ONE)  # fmax: nan smax -> ulps
        pos_mean = mean > tol
        delta = np.where(pos_mean, (ucl - mean) / np.where(pos_mean, mean, 1.0), np.nan)
    thr = rates * (1.0 - mean)
    return LoadTable(rates, k.astype(np.int64), mean, std, ucl, delta, thr, tir(rates, thr), top)


def finite_or_none(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None
