"""A stored sweep's one-way latency per load (``sweep --latency``): each usable trial's
histogram, as the trial engine stored it with the trial's counters (with
``--bidirectional`` both directions' merged; each direction's own by
``direction_latency_rows``)."""

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


def direction_latency_rows(store: Store, experiment_id: int, direction: str) -> list[LatencyAtLoad]:
    """A ``--bidirectional`` sweep's one direction ("forward", "reverse"): percentiles
    per load per direction over the usable runs ([]: no such histograms)."""
    return by_load(
        (r.load_index, float(both["rate_pps_per_direction"]), both[direction]["latency"])
        for r in store.trial_records(experiment_id)
        if not r.excluded
        and (both := r.counters.get("bidirectional"))
        and "latency" in both.get(direction, {})
    )
