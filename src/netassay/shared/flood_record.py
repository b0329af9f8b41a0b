"""A flood (``trial.flood``) stored as the trial it is: flood's MRR runs and the
doctor's floods store theirs alike."""

from __future__ import annotations

from netassay.counters.loss import SINK_LOCATIONS
from netassay.trial.engine import SOURCE
from netassay.trial.flood import Flood
from netassay.trial.record import TrialRecord

NOT_SATURATED = "not saturated"  # a flood the SUT lost nothing of: its MRR is a lower bound


FLOOD_KEYS = ("saturated", "offered_pps", "forwarded_pps", "program_forwarded")


def trial_of(index: int, flood: Flood, run_id: int | None = None) -> TrialRecord:
    """Flood number ``index`` (``run.flood``'s result) as the trial it is stored as."""
    loss = dict(flood["loss_location"])
    warnings = [] if flood["saturated"] else [
        f"{NOT_SATURATED}: the SUT lost nothing, so the rate it forwarded is a lower bound "
        "(the generator's CPU came first)"
    ]  # fmt: skip
    return TrialRecord(
        load_index=0, repetition=index, rate_pps=float(flood["offered_pps"]),
        duration_s=float(flood["duration_s"]), sent=int(flood["sent"]),
        received=int(flood["forwarded"]), source=SOURCE,
        achieved_rate_pps=float(flood["offered_pps"]), loss_location=loss,
        counters={"flood": {k: flood.get(k) for k in FLOOD_KEYS},
                  "deltas": flood.get("deltas", {}), "sink": "xdp", "run_id": run_id,
                  # --bidirectional: each direction's own (the trial's are their sums)
                  **({"bidirectional": flood["bidirectional"]}
                     if "bidirectional" in flood else {})},
        warnings=warnings, sink_dropped=sum(loss.get(k, 0) for k in SINK_LOCATIONS),
        run_id=run_id, cpu=flood.get("cpu", {}),
    )  # fmt: skip
