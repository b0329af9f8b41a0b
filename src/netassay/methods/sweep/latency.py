"""A stored sweep's one-way latency per load (``sweep --latency``): each usable trial's
histogram, as the trial engine stored it with the trial's counters."""

from __future__ import annotations

from netassay.analysis.latency import LatencyAtLoad, by_load
from netassay.store.db import Store


def latency_rows(store: Store, experiment_id: int) -> list[LatencyAtLoad]:
    """Percentiles per load over the runs that are not measurement faults."""
    return by_load(
        (r.load_index, r.rate_pps, r.counters["latency"])
        for r in store.trial_records(experiment_id)
        if not r.excluded and "latency" in r.counters
    )
