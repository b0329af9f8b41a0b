"""A reconfiguration test in words (the change, the effective blocked time over the
trials, each trial) and as one JSON object."""

from __future__ import annotations

import json

from netassay.methods.reconfig.store import ReconfigSummary, StoredReconfig
from netassay.shared.dataplane_counters import counters_text, own_drops_note
from netassay.units import fmt_rate

HOW = "effective blocked time: frames lost / the offered rate (FD.io CSIT's)"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f} ms"


def _source(s: ReconfigSummary) -> str:
    src = s.rate_from
    return f" ({s.rate} of search experiment {src['search_experiment']})" if src else ""


def lines(r: StoredReconfig) -> list[str]:
    exp, s = r.experiment, r.summary
    ci = "" if s.ci95_blocked_s is None else f" (95% CI +- {_ms(s.ci95_blocked_s)})"
    out = [
        f"{exp.label}, experiment {exp.id}: reconfiguration under {fmt_rate(s.rate_pps)}"
        f"{_source(s)}, {s.duration_s:g} s per trial, the change at {s.at_s:g} s",
        f"  change: {s.change}" + (f"; undo: {s.undo}" if s.undo else ""),
    ]
    if s.mean_blocked_s is None:
        out.append("  no usable trial (see the trials' warnings)")
    else:
        out.append(
            f"  effective blocked time: mean {_ms(s.mean_blocked_s)}{ci}, min "
            f"{_ms(s.min_blocked_s)}, max {_ms(s.max_blocked_s)}; {s.lost:,} frames "
            f"lost over {s.trials} trial(s)"
        )
    for t in s.per_trial:
        where = ", ".join(f"{k} {v:,}" for k, v in t.loss_location.items())
        took = "" if t.change_s is None else f", the change took {t.change_s * 1e3:.0f} ms"
        ex = f", excluded: {t.excluded}" if t.excluded else ""
        out.append(f"  trial {t.trial + 1}: lost {t.lost:,} ({_ms(t.blocked_s)})"
                   f"{' at ' + where if where else ''}{took}{ex}")  # fmt: skip
        own = t.sut_counters
        if own:  # a data plane's own counters over the trial, beside the loss location
            out.append(f"    the SUT's own counters: {counters_text(own)}")
            note = own_drops_note(own)
            out += [f"    ({note})"] if note else []
    out.append(f"  ({HOW})")
    return out


def text(r: StoredReconfig) -> str:
    return "\n".join(["", *lines(r)])


def as_json(r: StoredReconfig) -> str:
    exp = r.experiment
    obj = {"kind": exp.kind, "label": exp.label, "experiment_id": exp.id, "db": str(r.db),
           "how": HOW, **r.summary.to_json()}  # fmt: skip
    return json.dumps(obj, sort_keys=True, allow_nan=False)
