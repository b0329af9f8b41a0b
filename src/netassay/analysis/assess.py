"""Assess one experiment: statistics, bounds, saturation, verdict, quality flags. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netassay.analysis.bounds import Bound, measured_bound
from netassay.analysis.caps import CapExcess
from netassay.analysis.latency import LatencyAtLoad
from netassay.analysis.saturation import Saturation, detect_saturation
from netassay.analysis.stats import LoadTable, load_table, tir, trial_plr
from netassay.config import AnalysisConfig
from netassay.errors import InputError
from netassay.store.loads import Loads
from netassay.units import fmt_rate


@dataclass(frozen=True)
class Assessment:
    source: str
    label: str
    metadata: dict[str, Any]
    mode: str
    params: dict[str, float]
    table: LoadTable
    tir_used: np.ndarray  # the TIR the verdict was computed on (clamped PLR in published mode)
    saturation: Saturation
    pdr: Bound
    ndr: Bound
    duration_s: float | None
    flags: list[str] = field(default_factory=list)  # measurement-quality notes
    trial_warnings: int = 0
    excluded_trials: int = 0
    # a sweep run with --latency: the one-way latency per load over the runs
    latency: tuple[LatencyAtLoad, ...] = ()
    above_cap: tuple[CapExcess, ...] = ()  # bounds above a cap netassay set, and why

    @property
    def verdict(self) -> str:
        return self.saturation.verdict

    @property
    def k_values(self) -> list[int]:
        """The distinct K of the measured loads."""
        return sorted({int(k) for k in self.table.k if k > 0})

    def worst_delta_below_pdr(self) -> float | None:
        end = self.saturation.past_pdr_index
        d = self.table.delta_ucl95[: end if end is not None else len(self.table)]
        d = d[np.isfinite(d)]
        return float(d.max()) if d.size else None

    def to_json(self) -> dict[str, Any]:
        """``loads[i]`` is load index i of the plan, measured or not (k = 0, reason)."""
        t = self.table
        columns = (t.rate_pps, t.plr, t.plr_std, t.ucl95, t.delta_ucl95, t.dr, t.throughput_pps)
        rate, plr, std, ucl, delta, dr, thr, tir_ = map(_nums, (*columns, self.tir_used))
        k, excluded = t.k.tolist(), t.excluded.tolist()
        loads = [
            {
                "rate_pps": rate[i],
                "k": k[i],
                "plr": plr[i],
                "plr_std": std[i],
                "ucl95": ucl[i],
                "delta_ucl95": delta[i],
                "dr": dr[i],
                "throughput_pps": thr[i],
                "tir": tir_[i],
                "excluded": excluded[i],
                "reason": t.reason[i] or None,
            }
            for i in range(len(t))
        ]
        s = self.saturation
        return {
            "source": self.source,
            "label": self.label,
            "metadata": self.metadata,
            "mode": self.mode,
            "params": self.params,
            "verdict": s.verdict,
            "reason": s.reason,
            "past_pdr_index": s.past_pdr_index,
            "potential_saturation_index": s.potential_saturation_index,
            "saturation_index": s.saturation_index,
            "saturation_exits": list(s.exits),
            "pdr_pps": self.pdr.rate_pps,
            "pdr_met_again_pps": list(self.pdr.met_again),
            "ndr_pps": self.ndr.rate_pps,
            "ndr_met_again_pps": list(self.ndr.met_again),
            "k": self.k_values,
            "duration_s": self.duration_s,
            "worst_delta_ucl95_below_pdr": self.worst_delta_below_pdr(),
            "warnings": list(s.warnings) + self.flags,
            "trial_warnings": self.trial_warnings,
            "excluded_trials": self.excluded_trials,
            "loads": loads,
            **({"latency": [r.to_json() for r in self.latency]} if self.latency else {}),
            **({"above_cap": [x.to_json() for x in self.above_cap]} if self.above_cap else {}),
        }


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _nums(column: np.ndarray) -> list[float | None]:
    """A numpy column as JSON numbers: nan and inf become None."""
    return [x if math.isfinite(x) else None for x in column.tolist()]


def assess_trials(
    load_index: np.ndarray,
    rate_pps: np.ndarray,
    sent: np.ndarray,
    received: np.ndarray,
    cfg: AnalysisConfig,
    *,
    source: str = "",
    label: str = "",
    metadata: dict[str, Any] | None = None,
    duration_s: float | None = None,
    trial_warnings: int = 0,
    excluded_trials: int = 0,
    loads: Loads | None = None,
) -> Assessment:
    """Assess the usable trials of one experiment, given as columns.

    The caller leaves out the trials excluded as measurement faults and says how many;
    ``loads`` names every load index of the plan with its trials excluded and why.
    Loads that are not strictly increasing raise InputError naming the source.
    """
    try:
        table = load_table(load_index, rate_pps, trial_plr(sent, received), sent=sent, loads=loads)
    except InputError as exc:
        raise InputError(f"{source or label}: {exc.what}", exc.why, exc.todo) from exc
    return assess_table(
        table,
        cfg,
        source=source,
        label=label,
        metadata=metadata or {},
        duration_s=duration_s,
        trial_warnings=trial_warnings,
        excluded_trials=excluded_trials,
    )


def assess_table(
    table: LoadTable,
    cfg: AnalysisConfig,
    *,
    source: str = "",
    label: str = "",
    metadata: dict[str, Any] | None = None,
    duration_s: float | None = None,
    trial_warnings: int = 0,
    excluded_trials: int = 0,
) -> Assessment:
    plr = table.plr
    tir_used = table.tir
    if cfg.mode == "published":  # the notebook clamps the mean PLR at the floor
        plr = np.maximum(plr, cfg.plr_floor)
        tir_used = tir(table.rate_pps, table.rate_pps * (1.0 - plr))
    sat = detect_saturation(
        table.rate_pps,
        plr,
        tir_used,
        pdr=cfg.pdr,
        eta=cfg.eta,
        entry_factor=cfg.entry_factor,
        mode=cfg.mode,
        reasons=table.reason,
    )
    flags = quality_flags(table, sat, cfg)
    flags.extend(f"assumed: {note}" for note in (metadata or {}).get("assumed", []))
    if excluded_trials:
        flags.append(
            f"{excluded_trials} trial(s) left out of the statistics: measurement faults "
            "(generator limit, overshoot or stall, counter or sink fault, truncated trial, "
            "testbed fault), "
            "not SUT loss; kept in the store, and each load says how many and why"
        )
    if trial_warnings > excluded_trials:
        flags.append(
            f"{trial_warnings - excluded_trials} trial(s) carry other measurement warnings "
            "(see the store)"
        )
    return Assessment(
        source=source,
        label=label,
        metadata=metadata or {},
        mode=cfg.mode,
        params={"pdr": cfg.pdr, "eta": cfg.eta, "entry_factor": cfg.entry_factor},
        table=table,
        tir_used=tir_used,
        saturation=sat,
        pdr=measured_bound(table.rate_pps, table.plr, cfg.pdr),
        # NDR: every trial of the load lost nothing (negative loss counts as zero)
        ndr=measured_bound(table.rate_pps, table.plr_max, 0.0),
        duration_s=duration_s,
        flags=flags,
        trial_warnings=trial_warnings,
        excluded_trials=excluded_trials,
    )


def quality_flags(table: LoadTable, sat: Saturation, cfg: AnalysisConfig) -> list[str]:
    """Loads below PDR with non-negligible loss or a wide CI; loads with a single trial."""
    flags: list[str] = []
    end = sat.past_pdr_index if sat.past_pdr_index is not None else len(table)
    plr, delta = table.plr[:end], table.delta_ucl95[:end]
    for i in np.flatnonzero((plr >= cfg.small_loss) | (delta > cfg.wide_ci)).tolist():
        rate = fmt_rate(table.rate_pps[i])
        if plr[i] >= cfg.small_loss:
            flags.append(f"load {i} ({rate}): loss {plr[i]:.2e} below PDR is non-negligible")
        if delta[i] > cfg.wide_ci:  # nan compares false
            d = f"{delta[i]:.3g}"
            flags.append(f"load {i} ({rate}): wide confidence interval (Delta_UCL95 {d})")
    if np.any(table.k == 1):
        flags.append("some loads have a single trial: no confidence interval there")
    return flags
