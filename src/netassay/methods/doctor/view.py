"""A doctor run in words (one line per check: status, name, figure, the fix; then the
verdict and the trusted range) and as one JSON object."""

from __future__ import annotations

import json

from netassay.methods.doctor.checks import PASS
from netassay.methods.doctor.store import StoredDoctor
from netassay.units import fmt_rate

WIDTH = 20  # the check names' column


def check_line(status: str, name: str, figure: str, fix: str) -> str:
    tail = f"  ({fix})" if fix and status != PASS else ""
    return f"{status:4}  {name:{WIDTH}}  {figure}{tail}"


def verdict_line(r: StoredDoctor) -> str:
    """The verdict and the trusted range in one line."""
    s = r.summary
    n = s.counts
    tail = "" if s.finished else " (unfinished: the run was cut short)"
    trusted = (
        f"; a sweep can trust loads up to {fmt_rate(s.trusted_pps)} here now "
        f"(worth sweeping up to {fmt_rate(s.sweep_to_pps)}; router MRR "
        f"{fmt_rate(s.mrr_pps)})"
        if s.trusted_pps
        else ""
    )
    return (
        f"verdict: {s.verdict} ({n['PASS']} pass, {n['WARN']} warn, {n['FAIL']} fail)"
        f"{trusted}{tail}"
    )


def lines(r: StoredDoctor) -> list[str]:
    exp = r.experiment
    return [
        f"{exp.label}, experiment {exp.id} ({exp.created_utc}):",
        *(check_line(c.status, c.name, c.figure, c.fix) for c in r.checks),
        verdict_line(r),
    ]


def text(r: StoredDoctor) -> str:
    return "\n".join(["", *lines(r)])


def as_json(r: StoredDoctor) -> str:
    exp = r.experiment
    obj = {
        "kind": exp.kind,
        "label": exp.label,
        "experiment_id": exp.id,
        "utc": exp.created_utc,
        "db": str(r.db),
        **r.summary.to_json(),
        "checks": [
            {"name": c.name, "status": c.status, "figure": c.figure, "fix": c.fix, "value": c.value}
            for c in r.checks
        ],
    }
    return json.dumps(obj, sort_keys=True, allow_nan=False)
