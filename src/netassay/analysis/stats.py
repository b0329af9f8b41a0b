"""Per-load statistics of a load-loss curve (PASTRAMI, section IV). Pure functions."""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from netassay.errors import InputError
from netassay.store.loads import Loads
from netassay.units import fmt_rate

# A mean loss ratio this close to zero is zero up to rounding: 1 - received/sent is
# exact to about one ulp of 1, so the mean of such values carries a few ulps of noise.
ULPS_OF_ONE = 8 * float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class LoadTable:
    """One row per load index of the plan, in increasing load order (numpy columns).

    A load with no usable trial (k = 0: all its trials excluded, or not measured yet)
    keeps its row with nan statistics and its reason, so TIR and the bounds stop at it.
    """

    rate_pps: np.ndarray  # offered load O
    k: np.ndarray  # trials used at this load (0: not measured)
    plr: np.ndarray  # mean of the per-trial loss ratios (as measured; may be < 0)
    plr_std: np.ndarray  # sample std, ddof 1 (nan when k < 2)
    ucl95: np.ndarray  # PLR + t(K-1, 0.975) * std / sqrt(K) (nan when k < 2)
    delta_ucl95: np.ndarray  # (UCL95 - PLR) / PLR (nan when PLR is <= 0 up to rounding, k < 2)
    throughput_pps: np.ndarray  # T(O) = O * (1 - PLR)
    tir: np.ndarray  # (T_i - T_{i-1}) / (O_i - O_{i-1}); nan at the first load and at gaps
    plr_max: np.ndarray  # the largest per-trial loss ratio (NDR: <= 0 when no trial lost)
    excluded: np.ndarray  # trials of the load left out of the statistics
    reason: tuple[str, ...]  # why they were left out, or why the load is not measured

    @property
    def dr(self) -> np.ndarray:
        return 1.0 - self.plr

    @property
    def measured(self) -> np.ndarray:
        return self.k > 0

    def __len__(self) -> int:
        return int(self.rate_pps.size)


def trial_plr(sent: np.ndarray, received: np.ndarray) -> np.ndarray:
    """Per-trial loss ratio 1 - received/sent (negative when received > sent)."""
    sent = np.asarray(sent, dtype=np.float64)
    plr: np.ndarray = 1.0 - np.asarray(received, dtype=np.float64) / sent
    return plr


@functools.lru_cache(maxsize=4096)
def _t975(df: int) -> float:
    # scipy's Student-t quantile: scipy.stats.t.ppf(0.975, df) is this same function,
    # and scipy.special imports in half the time of scipy.stats (the CLI's start-up)
    return float(stdtrit(df, 0.975))


def t_critical(k: np.ndarray | int) -> np.ndarray:
    """Two-sided 95% Student-t critical value with k - 1 degrees of freedom (nan for k < 2)."""
    return _t_column(tuple(np.atleast_1d(np.asarray(k, dtype=np.int64)).tolist())).copy()


@functools.lru_cache(maxsize=1024)
def _t_column(k: tuple[int, ...]) -> np.ndarray:
    return np.array([_t975(x - 1) if x >= 2 else np.nan for x in k], dtype=np.float64)


def tir(rate_pps: np.ndarray, throughput_pps: np.ndarray) -> np.ndarray:
    """Throughput Increase Ratio between consecutive loads; nan at index 0 and next to a
    load without a throughput (not measured)."""
    out = np.empty(rate_pps.shape)
    out[:1] = np.nan
    out[1:] = (throughput_pps[1:] - throughput_pps[:-1]) / (rate_pps[1:] - rate_pps[:-1])
    return out


def check_increasing(rate_pps: np.ndarray) -> None:
    """Raise InputError unless the known offered loads increase strictly with the index.

    Duplicate or unsorted loads are rejected, not merged: two load indices at one rate
    are two measurements (perhaps taken under other conditions, e.g. a resumed sweep),
    and pooling them would change K silently and break "row i is load index i of the
    plan"; sorting them would break it too. TIR divides by the step between consecutive
    loads, so at a repeat it is infinite and on an unsorted list its sign is wrong.
    """
    if np.all(rate_pps[1:] > rate_pps[:-1]):
        return
    idx = np.flatnonzero(np.isfinite(rate_pps))
    r = rate_pps[idx]
    bad = np.flatnonzero(np.diff(r) <= 0)
    if not bad.size:
        return
    i, j = int(idx[bad[0]]), int(idx[bad[0] + 1])
    how = "repeats" if rate_pps[j] == rate_pps[i] else "is below"
    raise InputError(
        f"load {j} ({fmt_rate(rate_pps[j])}) {how} load {i} ({fmt_rate(rate_pps[i])})",
        "offered loads must increase strictly: TIR divides by the step between consecutive "
        "loads, which is zero at a repeated load and negative on an unsorted list, so "
        "duplicates are rejected rather than merged",
        "measure each load once, in increasing order (sort and deduplicate the rate list)",
    )


def _group(
    load_index: np.ndarray, columns: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Sort trials by load index (stable) and find the groups: (starts, index, columns)."""
    if load_index.size > 1 and np.any(load_index[1:] < load_index[:-1]):
        order = np.argsort(load_index, kind="stable")
        load_index = load_index[order]
        columns = [c[order] for c in columns]
    change = np.empty(load_index.size, dtype=bool)
    change[0] = True
    np.not_equal(load_index[1:], load_index[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return starts, load_index, columns


def _moments(
    starts: np.ndarray, k: np.ndarray, cols: list[np.ndarray], with_sent: bool
) -> list[np.ndarray]:
    """Per group of trials: mean, sum of squared deviations, max loss ratio, max sent."""
    if not starts.size:
        return [np.empty(0)] * 4
    x = cols[0]
    mean = np.add.reduceat(x, starts) / k
    dev = x - np.repeat(mean, k)
    smax = np.maximum.reduceat(cols[2], starts) if with_sent else np.full(k.size, np.nan)
    return [mean, np.add.reduceat(dev * dev, starts), np.maximum.reduceat(x, starts), smax]


def load_table(
    load_index: np.ndarray,
    rate_pps: np.ndarray,
    plr: np.ndarray,
    *,
    sent: np.ndarray | None = None,
    loads: Loads | None = None,
) -> LoadTable:
    """Aggregate per-trial loss ratios into per-load statistics.

    ``rate_pps`` is the offered load of each trial. With ``loads`` (every load index of
    the plan), row i is load index i and loads without trials get k = 0; without it, one
    row per load index present. ``sent`` (per trial) gives the resolution below which a
    mean loss ratio is zero up to rounding: half a packet over the load's trials, i.e.
    |PLR| < 0.5 / (K * max sent), or a few ulps; such a load has no Delta_UCL95.
    Vectorized: cost is linear in the number of trials.
    """
    li = np.asarray(load_index, dtype=np.int64)
    cols = [np.asarray(plr, dtype=np.float64), np.asarray(rate_pps, dtype=np.float64)]
    if sent is not None:
        cols.append(np.asarray(sent, dtype=np.float64))
    if li.size:
        starts, li, cols = _group(li, cols)
        present, kp = li[starts], np.empty(starts.size, dtype=np.int64)
        kp[:-1] = starts[1:] - starts[:-1]
        kp[-1] = li.size - starts[-1]
    else:
        starts = present = kp = np.empty(0, dtype=np.int64)
    n, pos, rates, excluded, reason = _plan_rows(loads, present, cols[1][starts])
    check_increasing(rates)
    moments = _moments(starts, kp, cols, sent is not None)
    if present.size == n:  # every row has trials (present is sorted and unique)
        k = kp
        mean, ss, top, smax = moments
    else:
        k = np.zeros(n, dtype=np.int64)
        k[pos] = kp
        mean, ss, top, smax = (np.full(n, np.nan) for _ in range(4))
        for full, part in zip((mean, ss, top, smax), moments, strict=True):
            full[pos] = part
    quiet = n == 0 or k.min() < 2  # nan rows (k < 2) are expected, not worth a warning
    with np.errstate(invalid="ignore", divide="ignore") if quiet else contextlib.nullcontext():
        std = np.sqrt(ss / (k - 1))
        if quiet:
            std = np.where(k >= 2, std, np.nan)
        ucl = mean + t_critical(k) * std / np.sqrt(k)
        tol = np.fmax(0.5 / (k * smax), ULPS_OF_ONE)  # fmax: nan smax -> ulps
        pos_mean = mean > tol
        delta = np.where(pos_mean, (ucl - mean) / np.where(pos_mean, mean, 1.0), np.nan)
    thr = rates * (1.0 - mean)
    return LoadTable(
        rates, k, mean, std, ucl, delta, thr, tir(rates, thr), top, excluded, tuple(reason)
    )


def _plan_rows(
    loads: Loads | None, present: np.ndarray, first_rates: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """The table's rows: one per planned load, or one per load index with trials.

    Returns the row count, each present load's row, and the rows' rates, exclusion
    flags and reasons."""
    if loads is None:
        n = present.size
        return n, np.arange(n), first_rates, np.zeros(n, dtype=np.int64), ("",) * n
    n = len(loads)
    if present.size and (present[0] < 0 or present[-1] >= n):
        bad = int(present[0] if present[0] < 0 else present[-1])
        raise InputError(
            f"trials at load index {bad}, outside the plan's {n} load(s)",
            "every trial belongs to one of the planned loads",
            "the store is damaged; run 'netassay db check'",
        )
    return n, present, loads.rate_pps, loads.excluded, loads.reason


def finite_or_none(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None
