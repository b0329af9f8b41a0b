"""A stored ``--bidirectional`` sweep per direction: per load, each direction's sent,
received, loss ratio and where its frames were lost, summed over the runs that are not
measurement faults, from what the trial engine stored in each trial's counters
(``counters["bidirectional"]``, see ``trial.bidirectional``). The trial's own rate and
counts are both directions' sum (FD.io CSIT's aggregate); these are each direction's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netassay.counters.loss import main_location
from netassay.store.db import Store

DIRECTIONS = ("forward", "reverse")
CONVENTION = (
    "--bidirectional: the loads, rates, PLR, PDR and NDR above are both directions' "
    "aggregate (FD.io CSIT's convention: the sum of both directions' loads and frames); "
    "each direction's own, summed over its runs:"
)


@dataclass
class DirectionAtLoad:
    """One direction's trials at one load: counts and loss by location, summed."""

    sent: int = 0
    received: int = 0
    loss: dict[str, int] = field(default_factory=dict)

    def add(self, side: dict[str, Any]) -> None:
        self.sent += int(side["sent"])
        self.received += int(side["received"])
        for k, v in side["loss_location"].items():
            self.loss[k] = self.loss.get(k, 0) + int(v)

    def to_json(self) -> dict[str, Any]:
        lost = self.sent - self.received
        return {
            "sent": self.sent,
            "received": self.received,
            "lost": lost,
            "loss_ratio": lost / self.sent if self.sent else None,
            "main_location": main_location(self.loss),
            "loss_location": {k: v for k, v in self.loss.items() if v},
        }


@dataclass
class LoadBothWays:
    """One load's trials: the load per direction and each direction's sums."""

    rate_pps_per_direction: float
    runs: int = 0
    sides: dict[str, DirectionAtLoad] = field(
        default_factory=lambda: {d: DirectionAtLoad() for d in DIRECTIONS}
    )

    def add(self, both: dict[str, Any]) -> None:
        self.runs += 1
        for d in DIRECTIONS:
            self.sides[d].add(both[d])


def direction_rows(store: Store, experiment_id: int) -> list[LoadBothWays]:
    """The experiment's loads, each direction's counts summed over its used runs
    ([]: not a --bidirectional experiment)."""
    rows: dict[float, LoadBothWays] = {}
    for r in store.trial_records(experiment_id):
        both = r.counters.get("bidirectional")
        if r.excluded or not both:
            continue
        rate = float(both["rate_pps_per_direction"])
        rows.setdefault(rate, LoadBothWays(rate)).add(both)
    return [rows[k] for k in sorted(rows)]


def directions_json(rows: list[LoadBothWays]) -> dict[str, Any]:
    """The per-direction table as one JSON object (``bidirectional`` in sweep --json)."""
    return {
        "convention": "aggregate of both directions (FD.io CSIT)",
        "loads": [
            {
                "rate_pps_per_direction": r.rate_pps_per_direction,
                "rate_pps_aggregate": 2 * r.rate_pps_per_direction,
                "runs": r.runs,
                **{d: r.sides[d].to_json() for d in DIRECTIONS},
            }
            for r in rows
        ],
    }


SIDE_HEADER = f"{'direction':<8} {'sent':>10} {'received':>10} {'loss':>9}  where"


def side_columns(direction: str, s: dict[str, Any]) -> str:
    """One direction's counts (``DirectionAtLoad.to_json``) under ``SIDE_HEADER``."""
    loss = "-" if s["loss_ratio"] is None else f"{s['loss_ratio']:.3%}"
    return (f"{direction:<8} {s['sent']:>10} {s['received']:>10} {loss:>9}  "
            f"{s['main_location'] or '-'}")  # fmt: skip


def directions_lines(doc: dict[str, Any]) -> list[str]:
    """``directions_json``'s object in words: a line per load and direction."""
    out = [CONVENTION, f"  {'pps/dir':>10} {'aggregate':>10} {'runs':>4}  {SIDE_HEADER}"]
    for load in doc["loads"]:
        for d in DIRECTIONS:
            out.append(
                f"  {load['rate_pps_per_direction']:>10.0f} {load['rate_pps_aggregate']:>10.0f} "
                f"{load['runs']:>4}  {side_columns(d, load[d])}"
            )
    return out
