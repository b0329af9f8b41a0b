"""Recovery tests in the store: an experiment of kind ``recovery``, one trial per
overload and its recovery (load index 0, repetition = the trial), each a trial of the
trial engine with ``counters["recovery"]``: the loads, A (``t_drop_s``), the sink's
samples, the intervals after A and the recovery time found."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from netassay.analysis.recovery import Recovery, RecoveryBenchmark, recovery
from netassay.analysis.recovery import summary as over_trials
from netassay.store.db import Experiment, Store

KIND = "recovery"


@dataclass(frozen=True)
class RecoveryTrial:
    """One stored trial of a recovery test: its recovery time (None: not recovered), the
    deficit's change until then (< 0 a backlog drained, > 0 frames lost), the frames it
    lost and sent, and why it is excluded (None: used)."""

    trial: int
    recovery_s: float | None
    settled_frames: float | None
    lost: int
    sent: int
    excluded: str | None


@dataclass(frozen=True)
class RecoverySummary(RecoveryBenchmark):
    """A stored recovery test summed up: the recovery over its used trials
    (``analysis.recovery``), the loads and times it was run with (as its config holds
    them), the trials planned, stored and excluded, and each trial."""

    throughput: str | None
    throughput_pps: float
    throughput_from: dict[str, Any] | None  # the stored search (``methods.throughput``)
    overload: float
    overload_pps: float
    low_pps: float
    capped: bool | None
    overload_s: float
    recover_s: float
    interval_s: float
    trials_planned: int
    trials_stored: int
    trials_excluded: int
    per_trial: list[RecoveryTrial]


@dataclass(frozen=True)
class StoredRecovery:
    db: Path
    experiment: Experiment
    summary: RecoverySummary


def recovered_in(trial: dict[str, Any], low_pps: float) -> Recovery:
    """A stored trial's recovery, found again from its samples (``analysis.recovery``:
    what netassay finds now, as a search is replayed)."""
    r = trial["counters"]["recovery"]
    return recovery([(t, c) for t, c in r["samples"]], r["t_drop_s"], low_pps)


def summary(store: Store, exp: Experiment) -> RecoverySummary:
    """The recovery over the used trials, with each trial's time and loss."""
    c = exp.config
    trials = store.trials(exp.id)
    used = [t for t in trials if not t["excluded"]]
    low = float(c["low_pps"])
    times = {t["repetition"]: recovered_in(t, low) for t in trials}
    keys = ("throughput", "throughput_pps", "throughput_from", "overload", "overload_pps",
            "low_pps", "capped", "overload_s", "recover_s", "interval_s")  # fmt: skip
    given: dict[str, Any] = {k: c.get(k) for k in keys}  # as configured (None: not)
    return RecoverySummary(
        **given,
        **asdict(over_trials([times[t["repetition"]].recovery_s for t in used])),
        trials_planned=int(c["trials"]),
        trials_stored=len(trials),
        trials_excluded=len(trials) - len(used),
        per_trial=[
            RecoveryTrial(
                trial=t["repetition"],
                recovery_s=times[t["repetition"]].recovery_s,
                settled_frames=times[t["repetition"]].settled_frames,
                lost=t["sent"] - t["received"] - t["sink_dropped"],
                sent=t["sent"],
                excluded=t["excluded"],
            )
            for t in trials
        ],
    )


def stored_recoveries(store: Store) -> Iterator[StoredRecovery]:
    for exp in list(store.experiments(kinds=(KIND,))):
        if "overload_pps" in exp.config:  # (one stopped while its throughput was measured: none)
            yield StoredRecovery(Path(store.path), exp, summary(store, exp))
