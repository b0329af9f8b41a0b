"""A soak in words (its verdict, the whole run's loss, its events) and as one JSON
object. Its seconds are estimates (``series``): the text says so once."""

from __future__ import annotations

import json
from typing import Any

from netassay.methods.soak.series import GAP_S, Event
from netassay.methods.soak.store import StoredSoak
from netassay.shared.imix_sizes import json_lines
from netassay.shared.rates import rates_lines
from netassay.trial.bidirectional import DIRECTIONS
from netassay.units import fmt_rate

CAVEAT = (
    "per-second figures are estimates: each segment's totals are exact, their split "
    f"across its seconds is not; segments run back to back, about {GAP_S:g} s apart"
)


def _where(loss: dict[str, int]) -> str:
    """Where the frames were lost (' at sut_egress 196,013, ...'), or nothing."""
    where = ", ".join(f"{k} {v:,}" for k, v in loss.items() if v)
    return f" at {where}" if where else ""


def event_line(e: Event) -> str:
    return (
        f"  event at {e.start_s:g} s for {e.length_s:g} s: ~{e.lost_est:,} frames "
        f"lost (est. loss ratio {e.loss_ratio_est:.2e})"
    )


def _direction(name: str, d: dict[str, Any]) -> str:
    """One direction of a --bidirectional soak: its loss, exact, and where."""
    ratio = "-" if d["loss_ratio"] is None else f"{d['loss_ratio']:.3e}"
    where = _where(d["loss_location"])
    return f"    {name}: loss ratio {ratio} ({d['lost']:,} of {d['sent']:,} lost){where}"


def lines(r: StoredSoak) -> list[str]:
    """A stored soak in words: what ran, its verdict, the loss, the events."""
    exp, s = r.experiment, r.summary
    ratio = s.loss_ratio
    done = (
        ""
        if s.finished
        else (
            f" (unfinished: {s.segments_stored} of {s.segments_planned} segments stored; "
            "continue with --resume)"
        )
    )
    src = s.rate_from
    load = f"{fmt_rate(s.rate_pps)}" + (
        f" ({s.load} of {src['goal']} {fmt_rate(src['pdr_pps'])}, search experiment "
        f"{src['search_experiment']})"
        if src
        else ""
    )
    why = "" if s.verdict != "INCONCLUSIVE" else f" ({s.reason})"
    lost = "-" if ratio is None else f"{ratio:.3e}"
    both = s.bidirectional
    if both:
        load += " per direction, both at once"
    return [
        f"{exp.label}, experiment {exp.id}: soak at {load} for {s.duration_s:g} s in "
        f"{s.segments_planned} segment(s) of {s.segment_s:g} s: {s.verdict}{why}{done}",
        f"  whole-run loss ratio {lost} against the goal {s.goal:g} "
        f"({s.sent - s.forwarded:,} of {s.sent:,} lost){_where(s.loss_location)}"
        + (" (both directions' sum)" if both else ""),
        *(_direction(d, both[d]) for d in DIRECTIONS if both),
        f"  segments: {s.segments_stored} stored, {s.segments_excluded} excluded "
        f"(measurement faults); {s.seconds} seconds read",
        f"  events (seconds above the goal): {len(s.events)}",
        *(event_line(e) for e in s.events),
        *(rates_lines(s.rates) if s.rates is not None else []),
        *(json_lines(s.imix) if s.imix is not None else []),
    ]


def text(r: StoredSoak) -> str:
    return "\n".join(["", *lines(r), f"  ({CAVEAT})"])


def as_json(r: StoredSoak) -> str:
    exp = r.experiment
    obj = {
        "kind": exp.kind,
        "label": exp.label,
        "experiment_id": exp.id,
        "db": str(r.db),
        "per_second_estimate": CAVEAT,
        **r.summary.to_json(),
    }
    return json.dumps(obj, sort_keys=True, allow_nan=False)
