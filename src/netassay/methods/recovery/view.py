"""A recovery test in words (the loads, the recovery time over the trials, each trial)
and as one JSON object."""

from __future__ import annotations

import json

from netassay.methods.recovery.store import RecoverySummary, StoredRecovery
from netassay.units import fmt_rate

RFC = "RFC 2544 26.5"
HOW = (
    "recovery: from the overload's end to the time the deficit (frames offered less frames "
    "counted since then) stops changing: no loss, no backlog draining"
)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f} ms"


def _source(s: RecoverySummary) -> str:
    src = s.throughput_from
    if src:
        return f"{s.throughput} of search experiment {src['search_experiment']}"
    return "given"


def lines(r: StoredRecovery) -> list[str]:
    exp, s = r.experiment, r.summary
    capped = " (capped at 98% of the generator's peak)" if s.capped else ""
    out = [
        f"{exp.label}, experiment {exp.id}: system recovery ({RFC}), throughput "
        f"{fmt_rate(s.throughput_pps)} ({_source(s)})",
        f"  overload {fmt_rate(s.overload_pps)} for {s.overload_s:g} s{capped}, then "
        f"{fmt_rate(s.low_pps)} for {s.recover_s:g} s, read every "
        f"{s.interval_s * 1e3:g} ms",
    ]
    ci = "" if s.ci95_s is None else f" (95% CI +- {_ms(s.ci95_s)})"
    if s.mean_s is None:
        out.append(f"  recovered in none of {s.trials} trial(s) within {s.recover_s:g} s")
    else:
        out.append(
            f"  recovery time: mean {_ms(s.mean_s)}{ci}, min {_ms(s.min_s)}, max "
            f"{_ms(s.max_s)}; {s.recovered} of {s.trials} trial(s) recovered"
        )
    each = ", ".join(
        f"{_ms(t.recovery_s) if t.recovery_s is not None else 'not recovered'}"
        f" ({t.lost:,} lost{', excluded' if t.excluded else ''})"
        for t in s.per_trial
    )
    out.append(f"  per trial: {each}")
    calm = sum(1 for t in s.per_trial if t.lost <= 0 and not t.excluded)
    if calm:
        out.append(
            f"  {calm} trial(s) lost nothing: the overload did not overload the SUT (its "
            "throughput is higher, or the generator's peak capped the overload)"
        )
    out.append(f"  ({HOW})")
    return out


def text(r: StoredRecovery) -> str:
    return "\n".join(["", *lines(r)])


def as_json(r: StoredRecovery) -> str:
    exp = r.experiment
    obj = {"kind": exp.kind, "label": exp.label, "experiment_id": exp.id, "db": str(r.db),
           "method": RFC, "how": HOW, **r.summary.to_json()}  # fmt: skip
    return json.dumps(obj, sort_keys=True, allow_nan=False)
