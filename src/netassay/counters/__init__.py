"""Kernel counters before and after each trial, and where the packets were lost."""

from netassay.counters.loss import LOCATIONS, counter_delta, locate_loss
from netassay.counters.snapshot import snapshot, wait_quiet

__all__ = ["LOCATIONS", "counter_delta", "locate_loss", "snapshot", "wait_quiet"]
