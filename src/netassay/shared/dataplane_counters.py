"""A data plane's own counters beside netassay's loss location (``--sut ovs | testpmd |
l3fwd``, ``testbed.dataplane``): per load, summed over the runs that are not
measurement faults, what netassay sent and the sink received, where the rest was lost
(``counters.loss``), and what the data plane itself counted over the same trials (Open
vSwitch's port and meter statistics, DPDK's port statistics: their deltas, stored with
each trial's counters under ``sut/dp/``). A sweep's loads, each load a search tried,
each flood."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netassay.counters.loss import dataplane_counters
from netassay.store.db import Store

NAMES = {"ovs": "Open vSwitch", "testpmd": "testpmd", "l3fwd": "l3fwd"}


def shown(name: str) -> bool:
    """A counter worth a line: frames, drops and errors (bytes are left to the JSON)."""
    return "bytes" not in name


@dataclass
class AtLoad:
    """One load's trials: netassay's counts and the data plane's, summed."""

    rate_pps: float
    runs: int = 0
    sent: int = 0
    received: int = 0
    loss: dict[str, int] = field(default_factory=dict)
    sut: dict[str, int] = field(default_factory=dict)

    def add(self, sent: int, received: int, loss: dict[str, int], d: dict[str, int]) -> None:
        self.runs += 1
        self.sent += sent
        self.received += received
        for k, v in loss.items():
            if k != "unsent" and v:
                self.loss[k] = self.loss.get(k, 0) + int(v)
        for k, v in dataplane_counters(d).items():
            self.sut[k] = self.sut.get(k, 0) + v

    def to_json(self) -> dict[str, Any]:
        return {
            "rate_pps": self.rate_pps,
            "runs": self.runs,
            "sent": self.sent,
            "received": self.received,
            "loss_location": dict(sorted(self.loss.items())),
            "sut_counters": dict(sorted(self.sut.items())),
        }


def rows(store: Store, experiment_id: int) -> list[AtLoad]:
    """The experiment's loads that carry a data plane's counters, in rate order."""
    out: dict[float, AtLoad] = {}
    for r in store.trial_records(experiment_id):
        d = r.counters.get("deltas") or {}
        if r.excluded or not any(k.startswith("sut/dp/") for k in d):
            continue
        out.setdefault(r.rate_pps, AtLoad(r.rate_pps)).add(r.sent, r.received, r.loss_location, d)
    return [out[k] for k in sorted(out)]


def stored(store: Store, experiment_id: int) -> dict[str, Any] | None:
    """``rows`` as JSON with the SUT's name (None: the SUT keeps no counters of its own)."""
    found = rows(store, experiment_id)
    if not found:
        return None
    sut = str(store.experiment(experiment_id).metadata.get("sut", ""))
    return {"sut": sut, "loads": [r.to_json() for r in found]}


def counters_text(counts: dict[str, int]) -> str:
    """A data plane's counters in words: ``sut0/rx_pkts 20,000; ...``."""
    return "; ".join(f"{k} {v:,}" for k, v in counts.items() if shown(k) and v) or "-"


# the frames a data plane dropped by its own count inside its forwarding (Open vSwitch's
# datapath drop counters, ``testbed.ovs.parse_coverage``): netassay's loss location
# gives them to the SUT's forwarding, not to loss no counter explains
OWN_DROPS = ("datapath/pipeline_drops", "datapath/other_drops")
OWN_DROPS_NOTE = (
    "datapath/pipeline_drops (a drop rule, a frame no rule matched) and datapath/other_drops "
    "are frames Open vSwitch's datapath dropped by its own count: lost at sut_forward, "
    "dropped in the data plane"
)


def own_drops_note(counts: dict[str, int]) -> str | None:
    """What the data plane's own drop counters mean, when they counted any."""
    return OWN_DROPS_NOTE if any(counts.get(k) for k in OWN_DROPS) else None


def json_lines(doc: dict[str, Any]) -> list[str]:
    """``stored``'s object in words: a line per load."""
    name = NAMES.get(doc["sut"], doc["sut"])
    out = [
        f"{name}'s own counters beside netassay's loss location, summed over each load's "
        "runs (the data plane's deltas over the same trials):",
        f"  {'load pps':>10} {'runs':>4} {'sent':>11} {'received':>11}  {'lost at':<24}  {name}'s",
    ]
    for ld in doc["loads"]:
        lost = ", ".join(f"{k} {v:,}" for k, v in ld["loss_location"].items()) or "-"
        out.append(
            f"  {ld['rate_pps']:>10,.0f} {ld['runs']:>4} {ld['sent']:>11,} {ld['received']:>11,}"
            f"  {lost:<24}  {counters_text(ld['sut_counters'])}"
        )
    notes = {own_drops_note(ld["sut_counters"]) for ld in doc["loads"]} - {None}
    out += [f"  ({n})" for n in sorted(n for n in notes if n)]
    return out
