"""The trial record: one run of traffic at one offered load, the unit stored.

Every method that measures trials returns these; the store writes and reads them
(``store.db``); a trial the measurement itself spoiled names its fault in its warnings
(``quality.exclusion``) and is left out of the statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netassay.quality import exclusion


@dataclass(frozen=True)
class TrialRecord:
    """One run of traffic at one offered load: the unit stored."""

    load_index: int
    repetition: int
    rate_pps: float
    duration_s: float
    sent: int
    received: int
    source: str
    achieved_rate_pps: float | None = None
    loss_location: dict[str, int] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    utc: str = ""
    # test frames the SUT forwarded that the sink's own ingress dropped (exact counters):
    # forwarded = received + sink_dropped is what the statistics count as delivered
    sink_dropped: int = 0
    run_id: int | None = None  # the run (a sweep's start or a resume) that measured it
    # per core over the trial (counters.cpu.use): shares of user, system, irq, softirq,
    # steal, idle and busy
    cpu: dict[str, Any] = field(default_factory=dict)

    @property
    def forwarded(self) -> int:
        return self.received + self.sink_dropped

    @property
    def excluded(self) -> str | None:
        """Why this trial is left out of the statistics (a measurement fault), or None."""
        return exclusion(self.warnings)
