"""Synthetic load-loss curves of PASTRAMI section IV-B (Eq. 3-5). Pure functions.

Used to check the verdict on curves whose answer is known, and by the benchmarks.
"""

from __future__ import annotations

import numpy as np


def ideal_plr(rate_pps: np.ndarray, sat_throughput_pps: float) -> np.ndarray:
    """Eq. 3: zero loss up to saturation, then PLR = 1 - T_sat / O."""
    o = np.asarray(rate_pps, dtype=np.float64)
    return np.where(o <= sat_throughput_pps, 0.0, 1.0 - sat_throughput_pps / o)


def realistic_throughput(
    rate_pps: np.ndarray,
    sat_load_pps: float = 1e6,
    plr_at_sat: float = 0.01,
    trash_load_pps: float = 1.5e6,
    m_pps: float = 1e6,
) -> np.ndarray:
    """Eq. 4-5 (the paper's Fig. 4): small losses below O_sat rising smoothly to
    ``plr_at_sat``; T = T_sat up to O_trash, then declining linearly with slope 1/M."""
    o = np.asarray(rate_pps, dtype=np.float64)
    t_sat = sat_load_pps * (1.0 - plr_at_sat)
    # below O_sat: log10(PLR) rises from -8 (at 0) to log10(plr_at_sat) (at O_sat)
    top = np.log10(plr_at_sat)
    x = np.minimum(o / sat_load_pps, 1.0)
    below = o * (1.0 - 10.0 ** (-8.0 + (top + 8.0) * x**4))
    f = np.where(o < trash_load_pps, 1.0, np.maximum(0.0, 1.0 - (o - trash_load_pps) / m_pps))
    return np.where(o <= sat_load_pps, below, f * t_sat)


def trials_from_plr(
    rate_pps: np.ndarray, plr: np.ndarray, k: int, sent_per_trial: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """K binomial trials per load with the given loss ratio: (load_index, rate, sent, received)."""
    rng = np.random.default_rng(seed)
    n = len(rate_pps)
    li = np.repeat(np.arange(n), k)
    rates = np.repeat(np.asarray(rate_pps, dtype=np.float64), k)
    sent = np.full(n * k, sent_per_trial, dtype=np.int64)
    p = np.clip(np.repeat(np.asarray(plr, dtype=np.float64), k), 0.0, 1.0)
    received = sent - rng.binomial(sent, p)
    return li, rates, sent, received
