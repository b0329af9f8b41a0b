"""The planned loads of an experiment, one per load index: the offered load, how many of
its trials were left out of the statistics, and why. Pure functions.

Every load index of the plan keeps its row, measured or not, so that a load whose trials
were all excluded (or that a running sweep has not reached yet) shows as a gap with its
reason instead of disappearing: TIR and the bounds stop at it, and position i of every
table is load index i of the plan.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from netassay.errors import InputError
from netassay.quality import FAULTS

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Loads:
    """Per load index of the plan: offered load, trials excluded, and the reason."""

    rate_pps: np.ndarray  # offered load (nan when neither the plan nor a trial names it)
    excluded: np.ndarray  # trials of the load left out of the statistics
    reason: tuple[str, ...]  # why ('' when every trial of the load is used)

    def __len__(self) -> int:
        return int(self.rate_pps.size)


def fault_kind(exclusion: str) -> str:
    """The fault a trial's exclusion names first ('generator limit', 'counter fault', ...)."""
    for part in exclusion.split("; "):
        for kind in FAULTS:
            if part.startswith(kind):
                return kind
    return exclusion.split(":", 1)[0][:40] or "excluded"


def load_reason(k_used: int, kinds: Counter[str]) -> str:
    """'all 3 trials excluded: generator limit', '1 of 3 trials excluded: ...', or ''."""
    n_ex = sum(kinds.values())
    if n_ex == 0:
        return NOT_MEASURED if k_used == 0 else ""
    if len(kinds) == 1:
        what = next(iter(kinds))
    else:
        what = ", ".join(f"{kind} ({n})" for kind, n in kinds.most_common())
    if k_used == 0:
        head = "its only trial excluded" if n_ex == 1 else f"all {n_ex} trials excluded"
    else:
        head = f"{n_ex} of {n_ex + k_used} trials excluded"
    return f"{head}: {what}"


def build_loads(
    planned_rates: Sequence[float],
    used: Iterable[tuple[int, float, int]],
    excluded: Iterable[tuple[int, float, str]],
) -> Loads:
    """Rows for every load index of the plan and every index that has trials.

    ``used``: (load index, offered load, trials used); ``excluded``: one (load index,
    offered load, exclusion text) per excluded trial. A trial's offered load wins over
    the plan's; an index that neither names has a nan rate.
    """
    used = list(used)
    excluded = list(excluded)
    if (  # the usual case: every planned load measured, nothing excluded
        not excluded
        and len(used) == len(planned_rates)
        and all(i == j for j, (i, _, _) in enumerate(used))
    ):
        rates = np.array([r for _, r, _ in used], dtype=np.float64)
        return Loads(rates, np.zeros(rates.size, dtype=np.int64), ("",) * rates.size)
    top = max([i for i, _, _ in used] + [i for i, _, _ in excluded], default=-1)
    n = max(len(planned_rates), top + 1)
    rates = np.full(n, np.nan)
    rates[: len(planned_rates)] = np.asarray(planned_rates, dtype=np.float64)
    k = np.zeros(n, dtype=np.int64)
    kinds: list[Counter[str]] = [Counter() for _ in range(n)]
    for i, rate, text in excluded:
        _check_index(i)
        rates[i] = rate
        kinds[i][fault_kind(text)] += 1
    for i, rate, k_used in used:
        _check_index(i)
        rates[i] = rate
        k[i] = k_used
    n_ex = np.array([sum(c.values()) for c in kinds], dtype=np.int64)
    return Loads(rates, n_ex, tuple(load_reason(int(k[i]), kinds[i]) for i in range(n)))


def _check_index(i: int) -> None:
    if i < 0:
        raise InputError(
            f"load index {i} is negative",
            "load indices count the plan's loads from 0",
            "the store is damaged; run 'netassay db check'",
        )


def planned_rates(config: object) -> list[float]:
    """The offered loads an experiment planned (config ``rates_pps``), or [] if it names none."""
    rates = config.get("rates_pps") if isinstance(config, dict) else None
    if not isinstance(rates, list):
        return []
    out = []
    for r in rates:
        if isinstance(r, bool) or not isinstance(r, int | float):
            return []
        out.append(float(r) if math.isfinite(r) else math.nan)
    return out
