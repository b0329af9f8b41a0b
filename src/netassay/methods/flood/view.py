"""A flood's result in words (one line per flood, then the rate) and as one JSON object;
a stored flood experiment (kind ``mrr``) the same way."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from netassay.analysis.acceptance import fmt_pct
from netassay.counters import sutstate
from netassay.counters.loss import dataplane_counters
from netassay.methods.flood.run import FloodResult
from netassay.shared.dataplane_counters import counters_text, own_drops_note
from netassay.store.db import Experiment
from netassay.trial.flood import Flood
from netassay.units import fmt_rate


def flood_line(i: int, f: Flood) -> str:
    where = ", ".join(f"{k} {v:,}" for k, v in f["loss_location"].items()) or "nowhere"
    line = (
        f"flood {i + 1}: offered {f['offered_pps'] / 1e6:.3f} Mpps, forwarded "
        f"{f['forwarded_pps'] / 1e6:.3f} Mpps ({f['forwarded']:,} of {f['sent']:,}); "
        f"lost at {where}" + ("" if f["saturated"] else " (not saturated)")
    )
    if f.get("sut"):  # the SUT's own counts at scale, beside where it lost frames
        line += f"; SUT: {sutstate.text(f['sut'])}"
    if f.get("flows"):
        line += f"; {sutstate.flows_text(f['flows'])}"
    own = dataplane_counters(f.get("deltas") or {})
    if own:  # a data plane's own counters over the flood, beside the loss location
        line += f"\n  the SUT's own counters: {counters_text(own)}"
        note = own_drops_note(own)
        line += f" ({note})" if note else ""
    both = f.get("bidirectional")
    if both is None:
        return line
    return "\n".join([line + " (both directions' sum)", *(
        f"  {d:<7} offered {one['offered_pps'] / 1e6:.3f} Mpps, received "
        f"{one['forwarded_pps'] / 1e6:.3f} Mpps ({one['forwarded']:,} of "
        f"{one['sent']:,}); lost at "
        + (", ".join(f"{k} {v:,}" for k, v in one["loss_location"].items()) or "nowhere")
        for d, one in (("forward", both["forward"]), ("reverse", both["reverse"]))
    )])  # fmt: skip


def summary_line(r: FloodResult) -> str:
    n = len(r.floods)
    bound = f" (lower bound: {r.unsaturated} of {n} not saturated)" if r.unsaturated else ""
    mfr = r.max_forwarding_rate_pps
    where = f"; stored in {r.db} (experiment {r.experiment_id})" if r.db else ""
    line = (
        f"{r.cfg.sut}: maximum forwarding rate {mfr / 1e6:.3f} Mpps (median of {n}){bound}" + where
    )
    per = directions_of(r)
    if per is None:
        return line
    return (
        f"{line}\n--bidirectional: that rate is both directions' sum (FD.io CSIT's aggregate); "
        f"received per direction (median): forward {per['forward'] / 1e6:.3f} Mpps, reverse "
        f"{per['reverse'] / 1e6:.3f} Mpps"
    )


def directions_of(r: FloodResult) -> dict[str, float] | None:
    """A --bidirectional flood's receive rate per direction, the median over its floods."""
    if not r.floods or "bidirectional" not in r.floods[0]:
        return None
    both = [f["bidirectional"] for f in r.floods]
    return {
        "forward": statistics.median(b["forward"]["forwarded_pps"] for b in both),
        "reverse": statistics.median(b["reverse"]["forwarded_pps"] for b in both),
    }


def as_json(r: FloodResult) -> str:
    out = {
        "testbed": r.testbed, "sut": r.cfg.sut, "pinning": r.cfg.pinning,
        "size_bytes": r.cfg.size_bytes, "changed_while_flooding": r.changed,
        "floods": [{k: v for k, v in f.items() if k != "deltas"} for f in r.floods],
        "max_forwarding_rate_pps": r.max_forwarding_rate_pps,
        "lower_bound": bool(r.unsaturated), "db": r.db, "experiment_id": r.experiment_id,
    }  # fmt: skip
    per = directions_of(r)
    if per is not None:  # --bidirectional: the rates above are both directions' sum
        out["bidirectional"] = {
            "convention": "aggregate of both directions (FD.io CSIT)",
            **{d: {"max_forwarding_rate_pps": v} for d, v in per.items()},
        }
    return json.dumps(out, sort_keys=True)


def ci_text(ci: Sequence[float], runs: int) -> str:
    """The MRR's 95% CI; one whose lower end falls below 0 is said to bound nothing."""
    text = f"95% CI {fmt_rate(ci[0])} .. {fmt_rate(ci[1])}"
    if ci[0] < 0:  # Student's t over a few runs far apart: no rate is below 0
        text += f" (reaches below 0: {runs} runs this far apart do not bound the MRR)"
    return text


def stored_lines(exp: Experiment, s: dict[str, Any]) -> list[str]:
    """A stored flood experiment in words: its MRR (median, range, 95% CI) and each run's."""
    ci = s["mrr_ci95_pps"]
    spread = (
        f" [{fmt_rate(s['mrr_min_pps'])} .. {fmt_rate(s['mrr_max_pps'])}]" if s["runs"] > 1 else ""
    )
    n, low = s["runs"], s["unsaturated"]
    bound = f"; lower bound: {low} of {n} not saturated" if low else ""
    where = ", ".join(f"{k} {v:,}" for k, v in s["loss_location"].items()) or "nowhere"
    return [
        f"{exp.label}, experiment {exp.id}: MRR {fmt_rate(s['mrr_pps'])} (median of "
        f"{s['runs']} floods){spread}"
        + (f", {ci_text(ci, s['runs'])}" if ci else "")
        + bound,
        "  MRR per run: " + ", ".join(fmt_rate(v) for v in s["mrr_per_run_pps"]),
        f"  offered {fmt_rate(s['offered_pps'])} (median); lost at {where}",
        *_stored_directions(s),
    ]  # fmt: skip


def _stored_directions(s: dict[str, Any]) -> list[str]:
    """A stored --bidirectional flood's MRR per direction ([]: one direction)."""
    both = s.get("bidirectional")
    if both is None:
        return []
    per = "; ".join(
        f"{d} MRR {fmt_rate(both[d]['mrr_pps'])} (runs: "
        + ", ".join(fmt_rate(v) for v in both[d]["mrr_per_run_pps"])
        + ")"
        for d in ("forward", "reverse")
    )
    return [
        "  --bidirectional: the MRR above is both directions' sum (FD.io CSIT's aggregate); "
        f"per direction: {per}"
    ]


def stored_json(exp: Experiment, s: dict[str, Any], db: str) -> str:
    obj = {
        "kind": exp.kind, "source": exp.source, "label": exp.label, "experiment_id": exp.id,
        "db": db, "verdict": None, "reason": "a flood measures its MRR; it judges nothing",
        **s,
    }  # fmt: skip
    return json.dumps(obj, sort_keys=True, allow_nan=False)


def flood_group_text(g: dict[str, Any]) -> str:
    """A flood group of a campaign: MRR (median over the cells, range), lost."""
    m = g["mrr_pps"]
    spread = f" [{fmt_rate(m['min'])}..{fmt_rate(m['max'])}]" if m["n"] > 1 else ""
    return f"MRR {fmt_rate(m['median'])}{spread}; lost {fmt_pct(g['loss_ratio']['median'])}"


def compare_text(result: dict[str, Any]) -> list[str]:
    """A store's floods side by side, best MRR first."""
    rows = sorted(result["experiments"], key=lambda r: r["rank"])
    lines = [f"floods in {result['db']}: {len(rows)} experiment(s), by MRR (median of runs)"]
    for r in rows:
        ci = r["mrr_ci95_pps"]
        lines.append(
            f"#{r['rank']} {r['label']} (experiment {r['experiment_id']}): MRR "
            f"{fmt_rate(r['mrr_pps'])}"
            + (f" ({ci_text(ci, r['runs'])})" if ci else "")
            + f", {r['runs']} runs: "
            + ", ".join(fmt_rate(v) for v in r["mrr_per_run_pps"])
            + f"; lost {fmt_pct(r['loss_ratio'])}"
        )
    return lines
