"""A flood's result in words (one line per flood, then the rate) and as one JSON object."""

from __future__ import annotations

import json
from typing import Any

from netassay.methods.flood.run import FloodResult


def flood_line(i: int, f: dict[str, Any]) -> str:
    where = ", ".join(f"{k} {v:,}" for k, v in f["loss_location"].items()) or "nowhere"
    return (
        f"flood {i + 1}: offered {f['offered_pps'] / 1e6:.3f} Mpps, forwarded "
        f"{f['forwarded_pps'] / 1e6:.3f} Mpps ({f['forwarded']:,} of {f['sent']:,}); "
        f"lost at {where}" + ("" if f["saturated"] else " (not saturated)")
    )


def summary_line(r: FloodResult) -> str:
    n = len(r.floods)
    bound = f" (lower bound: {r.unsaturated} of {n} not saturated)" if r.unsaturated else ""
    mfr = r.max_forwarding_rate_pps
    return f"{r.cfg.sut}: maximum forwarding rate {mfr / 1e6:.3f} Mpps (median of {n}){bound}"


def as_json(r: FloodResult) -> str:
    out = {
        "testbed": r.testbed, "sut": r.cfg.sut, "pinning": r.cfg.pinning,
        "size_bytes": r.cfg.size_bytes, "changed_while_flooding": r.changed,
        "floods": r.floods, "max_forwarding_rate_pps": r.max_forwarding_rate_pps,
        "lower_bound": bool(r.unsaturated),
    }  # fmt: skip
    return json.dumps(out, sort_keys=True)
