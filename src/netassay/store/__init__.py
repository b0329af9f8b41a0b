"""netassay.store: the SQLite results store (experiments, append-only trials)."""

from netassay.store.db import Experiment, Store, TrialArrays
from netassay.units import utc_now

__all__ = ["Experiment", "Store", "TrialArrays", "utc_now"]
