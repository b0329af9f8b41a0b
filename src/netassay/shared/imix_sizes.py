"""A stored experiment's frame mix (``--imix``: a sweep's, a search's, a soak's): per
load, the rate in frames/s and in bit/s at layers 2 and 1, and per frame size what was
sent and received, summed over the runs that are not measurement faults, as the trial
engine stored each trial's counts with its counters. Loss is on all frames (sent against
received) and per size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netassay.imix import bits_per_frame, from_spec, mean_frame_bytes
from netassay.store.db import Store


@dataclass
class MixAtLoad:
    """One load's trials of a mix: sent and received per size (``"64"``), summed."""

    rate_pps: float
    runs: int = 0
    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)

    def add(self, sizes: dict[str, dict[str, int]]) -> None:
        self.runs += 1
        for size, n in sizes.items():
            self.sent[size] = self.sent.get(size, 0) + n["sent"]
            self.received[size] = self.received.get(size, 0) + n["received"]


def _loss(sent: int, received: int) -> float | None:
    return None if sent == 0 else 1 - received / sent


def mix_rows(store: Store, experiment_id: int) -> tuple[str | None, list[MixAtLoad]]:
    """The experiment's mix (its ``spec``; None: no trial sent one) and its loads, one
    per rate offered (a sweep's loads, each load a search tried, a soak's one rate)."""
    mix, rows = None, dict[float, MixAtLoad]()
    for r in store.trial_records(experiment_id):
        if r.excluded or "imix" not in r.counters:
            continue
        mix = r.counters["imix"]["mix"]
        rows.setdefault(r.rate_pps, MixAtLoad(r.rate_pps)).add(r.counters["imix"]["sizes"])
    return mix, [rows[k] for k in sorted(rows)]


def stored_mix(store: Store, experiment_id: int) -> dict[str, Any] | None:
    """The experiment's mix as ``mix_json`` gives it (None: it sent one frame size)."""
    mix, rows = mix_rows(store, experiment_id)
    return None if mix is None else mix_json(mix, rows)


def mix_json(mix: str, rows: list[MixAtLoad]) -> dict[str, Any]:
    """The mix and its loads as JSON: rates in frames/s, bit/s at L2 (frames with their
    FCS) and L1 (also preamble, delimiter and inter-frame gap); counts per size."""
    m = from_spec(mix)
    return {
        "imix": mix,
        "mean_frame_bytes": round(mean_frame_bytes(m), 3),
        "bits_per_frame": {"l2": bits_per_frame(m, 2), "l1": bits_per_frame(m, 1)},
        "loads": [
            {
                "rate_pps": r.rate_pps,
                "rate_bps_l2": r.rate_pps * bits_per_frame(m, 2),
                "rate_bps_l1": r.rate_pps * bits_per_frame(m, 1),
                "runs": r.runs,
                "sent": sum(r.sent.values()),
                "received": sum(r.received.values()),
                "loss_ratio": _loss(sum(r.sent.values()), sum(r.received.values())),
                "sizes": {
                    s: {
                        "sent": r.sent[s],
                        "received": r.received[s],
                        "loss_ratio": _loss(r.sent[s], r.received[s]),
                    }
                    for s in r.sent
                },
            }
            for r in rows
        ],
    }


def mix_lines(mix: str, rows: list[MixAtLoad]) -> list[str]:
    """The mix's table in words: a line per load, the counts of each size summed over
    its runs."""
    return json_lines(mix_json(mix, rows))


def json_lines(doc: dict[str, Any]) -> list[str]:
    """``mix_json``'s object in words (what ``mix_lines`` says)."""
    mix = doc["imix"]
    sizes = [s for s, _ in (p.split(":") for p in mix.split(","))]
    out = [
        f"frame mix {mix} (sizes without the FCS; mean {doc['mean_frame_bytes']:.1f} B): "
        "rate in frames/s and Mbit/s at L2 (with the FCS) and L1 (also preamble, "
        "delimiter and inter-frame gap); sent/received per size over the runs",
        f"  {'load pps':>10} {'L2 Mb/s':>9} {'L1 Mb/s':>9} {'runs':>4} {'loss':>9}  "
        + "  ".join(f"{s + ' B':>19}" for s in sizes),
    ]
    for load in doc["loads"]:
        loss = "-" if load["loss_ratio"] is None else f"{load['loss_ratio']:.3%}"
        cells = [f"{load['sizes'][s]['sent']:>9}/{load['sizes'][s]['received']:<9}" for s in sizes]
        out.append(
            f"  {load['rate_pps']:>10.0f} {load['rate_bps_l2'] / 1e6:>9.2f} "
            f"{load['rate_bps_l1'] / 1e6:>9.2f} {load['runs']:>4} {loss:>9}  " + "  ".join(cells)
        )
    return out
