"""Recovery tests in the store: an experiment of kind ``recovery``, one trial per
overload and its recovery (load index 0, repetition = the trial), each a trial of the
trial engine with ``counters["recovery"]``: the loads, A (``t_drop_s``), the sink's
samples, the intervals after A and the recovery time found."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.analysis.recovery import recovery
from netassay.analysis.recovery import summary as over_trials
from netassay.store.db import Experiment, Store

KIND = "recovery"


@dataclass(frozen=True)
class StoredRecovery:
    db: Path
    experiment: Experiment
    summary: dict[str, Any]


def recovered_in(trial: dict[str, Any], low_pps: float) -> dict[str, Any]:
    """A stored trial's recovery, found again from its samples (``analysis.recovery``:
    what netassay finds now, as a search is replayed)."""
    r = trial["counters"]["recovery"]
    return recovery([(t, c) for t, c in r["samples"]], r["t_drop_s"], low_pps)


def summary(store: Store, exp: Experiment) -> dict[str, Any]:
    """The recovery over the used trials, with each trial's time and loss."""
    c = exp.config
    trials = store.trials(exp.id)
    used = [t for t in trials if not t["excluded"]]
    low = float(c["low_pps"])
    times = {t["repetition"]: recovered_in(t, low) for t in trials}
    keys = ("throughput", "throughput_pps", "throughput_from", "overload", "overload_pps",
            "low_pps", "capped", "overload_s", "recover_s", "interval_s")  # fmt: skip
    return {
        **{k: c.get(k) for k in keys},
        **over_trials([times[t["repetition"]]["recovery_s"] for t in used]),
        "trials_planned": int(c["trials"]),
        "trials_stored": len(trials),
        "trials_excluded": len(trials) - len(used),
        "per_trial": [
            {
                "trial": t["repetition"],
                "recovery_s": times[t["repetition"]]["recovery_s"],
                # the deficit's change until then: < 0 a backlog drained, > 0 frames lost
                "settled_frames": times[t["repetition"]]["settled_frames"],
                "lost": t["sent"] - t["received"] - t["sink_dropped"],
                "sent": t["sent"],
                "excluded": t["excluded"],
            }
            for t in trials
        ],
    }


def stored_recoveries(store: Store) -> Iterator[StoredRecovery]:
    for exp in list(store.experiments(kinds=(KIND,))):
        if "overload_pps" in exp.config:  # (one stopped while its throughput was measured: none)
            yield StoredRecovery(Path(store.path), exp, summary(store, exp))
