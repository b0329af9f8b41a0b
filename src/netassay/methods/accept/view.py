"""What ``assess`` shows of acceptance tests: one object per test (``--json``) or a
few lines of text; the same object feeds the report's verdict table."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from netassay.analysis.acceptance import Verdict, fmt_bps, fmt_pct, judge
from netassay.methods.accept.result import Accepted, AcceptResult
from netassay.methods.accept.store import load_accept_tests
from netassay.store.paths import open_store, store_paths
from netassay.trial.accept import AcceptTest


def cpu_busy_pct(test: AcceptTest) -> dict[str, float]:
    """Per core: the mean over runs of each run's mean busy percentage."""
    per_core: dict[str, list[float]] = {}
    for run in test.runs:
        for core, busy in run.cpu_busy().items():
            per_core.setdefault(core, []).append(busy * 100)
    return {c: round(sum(v) / len(v), 2) for c, v in per_core.items()}


def summary(test: AcceptTest, verdict: Verdict | None = None) -> dict[str, Any]:
    """The assess object of one acceptance test."""
    v = verdict or judge(test)
    return {
        "kind": "accept",
        "source": test.source,
        "experiment_id": test.metadata.get("experiment_id"),
        "name": test.name,
        "label": test.label or test.name,
        "verdict": v.verdict,
        "reason": v.reason,
        "contract_bps": test.contract_bps,
        "layer": test.layer,
        "runs": len(test.runs),
        "ramp_steps": len(test.ramp),
        "throughput_bps": v.throughput_bps,
        "throughput_ci95_bps": v.throughput_ci95_bps,
        "lost_packets": v.lost_packets,
        "loss_ratio": v.loss_ratio,
        "failed_seconds": v.failed_seconds,
        "graded_seconds": v.graded_seconds,
        "cpu_busy_pct": cpu_busy_pct(test),
        "host_limited_where": v.host_limited_where,
        "scenario": test.scenario,
        "link": test.link,
        "notes": v.notes,
        "per_run": [
            {
                "index": r.index, "phase": r.phase, "verdict": r.verdict, "reason": r.reason,
                "throughput_bps": r.throughput_bps, "target_bps": r.target_bps,
                "lost_packets": r.lost_packets, "loss_ratio": r.loss_ratio,
                "host_limited_where": r.host_limited_where, "host_drops": r.host_drops,
                "cpu_busy_pct": {c: round(b * 100, 2) for c, b in r.cpu_busy.items()},
                "failed_seconds": len(r.failed_seconds), "graded_seconds": r.graded_seconds,
            }
            for r in [*v.ramp, *v.runs]
        ],
    }  # fmt: skip


def text_lines(s: dict[str, Any]) -> list[str]:
    """A few lines for people: the verdict, its reason, the figures, the runs."""
    contract = (
        "no contract given"
        if s["contract_bps"] is None
        else f"contract {fmt_bps(s['contract_bps'])}"
    )
    ci = s["throughput_ci95_bps"]
    ci_text = f" [95% CI {fmt_bps(ci[0])}, {fmt_bps(ci[1])}]" if ci else ""
    lost = "-" if s["lost_packets"] is None else f"{s['lost_packets']:,}"
    stored = "not stored" if s["experiment_id"] is None else f"experiment {s['experiment_id']}"
    lines = [
        f"acceptance test '{s['label']}' ({s['source']}, {stored}): {s['verdict']}",
        f"  {contract} at {s['layer']}; {s['runs']} run(s)"
        + (f", {s['ramp_steps']} ramp step(s)" if s["ramp_steps"] else ""),
        f"  throughput {fmt_bps(s['throughput_bps'])}{ci_text}; loss {fmt_pct(s['loss_ratio'])}"
        f" ({lost} datagrams)",
        f"  reason: {s['reason']}",
    ]
    failed = s["failed_seconds"]
    if s["graded_seconds"]:
        first = "; ".join(
            f"run {f['run']} {f['start_s']:.0f}-{f['end_s']:.0f} s: {f['why']}" for f in failed[:3]
        )
        more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        lines.append(
            f"  seconds failed: {len(failed)} of {s['graded_seconds']}"
            + (f" ({first}{more})" if failed else "")
        )
    if s["cpu_busy_pct"]:
        lines.append(
            "  CPU busy: " + ", ".join(f"{c} {b:.1f}%" for c, b in s["cpu_busy_pct"].items())
        )
    for r in s["per_run"]:
        lines.append(f"  {r['phase']} {r['index']}: {r['verdict']} ({r['reason']})")
    for note in s["notes"]:
        lines.append(f"  note: {note}")
    return lines


def ran(result: Accepted, as_json: bool) -> str:
    """What ``accept`` says when its run ends: each test's assess object with its runs'
    warnings (as one JSON line each), or its lines, its warnings and where it is stored."""
    return "\n".join(_ran(t, result.db, as_json) for t in result.tests)


def _ran(res: AcceptResult, db: str | None, as_json: bool) -> str:
    runs = [*res.test.ramp, *res.test.runs]
    warnings = list(dict.fromkeys(w for r in runs for w in r.warnings))
    s = {**summary(res.test, res.verdict), "experiment_id": res.experiment_id,
         "warnings": warnings}  # fmt: skip
    if as_json:
        return json.dumps(s, sort_keys=True, default=str)
    lines = [*text_lines(s), *(f"  warning: {w}" for w in warnings)]
    if db:
        lines.append(f"  stored in {db} (experiment {res.experiment_id})")
    return "\n".join(lines)


def stored_summaries(store: Any) -> list[dict[str, Any]]:
    return [summary(t) for t in load_accept_tests(store)]


def show_stored(inputs: Iterable[Path], as_json: bool, echo: Callable[[str], Any]) -> int:
    """``assess``: one object (or a few lines) per acceptance test of each store; returns
    how many tests were shown."""
    n = 0
    for p in store_paths(inputs):
        with open_store(p) as st:
            found = stored_summaries(st)
        for s in found:
            n += 1
            if as_json:
                echo(json.dumps({**s, "db": str(p)}, allow_nan=False, default=str))
            else:
                echo("\n" + "\n".join(text_lines(s)))
    return n


def fmt_cpu(c: dict[str, float]) -> str:
    """CPU busy per core as shares: 'cpu0:35% cpu1:80%'."""
    return " ".join(f"{k}:{v:.0%}" for k, v in c.items()) or "-"


def accept_group_text(g: dict[str, Any]) -> str:
    """An acceptance group of a campaign: throughput (median, range), loss, failed
    seconds, verdicts."""
    t, loss = g["throughput_bps"], g["loss_ratio"]
    spread = f" [{_bps(t['min'])}..{_bps(t['max'])}]" if t["n"] > 1 else ""
    verdicts = ", ".join(f"{k} {n}" for k, n in g["verdicts"].items())
    failed = g["failed_seconds"]["median"]
    return (
        f"throughput {_bps(t['median'])}{spread}; loss {fmt_pct(loss['median'])}; "
        f"failed seconds {'-' if failed is None else format(failed, 'g')}; {verdicts}; "
        f"CPU busy {fmt_cpu(g['cpu_busy'])}"
    )


def _bps(v: float | None) -> str:
    return "-" if v is None else fmt_bps(v)
