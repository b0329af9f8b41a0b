"""A store's sweeps side by side (``netassay compare`` of a store of plain sweeps): each
one's PDR and NDR (marked when only at least that) and verdict, ranked by PDR, and the
loss ratio of each at the loads they share.

A campaign's cells are compared by the campaign (tests, effect sizes per factor); the
sweeps here are those outside a campaign: each measured on its own, or imported.
"""

from __future__ import annotations

import math
from typing import Any

from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig
from netassay.shared.sweep_analyse import KINDS, assess_experiment
from netassay.store.db import Experiment, Store
from netassay.units import fmt_rate

SHOWN = 6  # sweeps whose per-load loss the text shows side by side (all in the JSON)
SAME_LOAD = 1e-6  # relative: one load written twice (bit/s rounded to frames/s)


def _plain(exp: Experiment) -> bool:
    """Not a campaign's cell (the campaign compares those)."""
    return not (
        isinstance(exp.metadata.get("campaign"), dict) and exp.metadata.get("role") == "cell"
    )


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def row(a: Assessment, exp: Experiment) -> dict[str, Any]:
    """One sweep: its bounds (each with whether it is only at least that), its verdict and
    its loss ratio per load."""
    t = a.table
    return {
        "experiment_id": exp.id, "label": exp.label, "source": exp.source,
        "created_utc": exp.created_utc, "verdict": a.verdict, "reason": a.saturation.reason,
        "pdr_pps": a.pdr.rate_pps, "pdr_at_least": a.pdr.at_least,
        "ndr_pps": a.ndr.rate_pps, "ndr_at_least": a.ndr.at_least,
        "k": a.k_values, "duration_s": a.duration_s, "excluded_trials": a.excluded_trials,
        "loads": [
            {"rate_pps": _num(t.rate_pps[i]), "k": int(t.k[i]), "plr": _num(t.plr[i]),
             "ucl95": _num(t.ucl95[i]), "excluded": int(t.excluded[i])}
            for i in range(len(t))
        ],
    }  # fmt: skip


def compared(store: Store, cfg: AnalysisConfig) -> dict[str, Any] | None:
    """The store's sweeps outside a campaign side by side, best PDR first (None: fewer
    than two, nothing to compare)."""
    rows, texts = [], {}
    for exp in store.experiments(kinds=KINDS):
        if not _plain(exp):
            continue
        a = assess_experiment(store, exp, cfg)
        if a is None:
            continue
        rows.append(row(a, exp))
        texts[exp.id] = (a.pdr.short(), a.ndr.short())
    if len(rows) < 2:
        return None
    ranked = sorted(rows, key=lambda r: -(r["pdr_pps"] if r["pdr_pps"] is not None else -1.0))
    for rank, r in enumerate(ranked, 1):
        r["rank"] = rank
        r["pdr_text"], r["ndr_text"] = texts[r["experiment_id"]]
    return {
        "kind": "sweep", "db": str(store.path), "pdr_goal": cfg.pdr,
        "shared_loads_pps": shared_loads(rows), "experiments": rows,
    }  # fmt: skip


def _measured(r: dict[str, Any]) -> list[float]:
    return [ld["rate_pps"] for ld in r["loads"] if ld["plr"] is not None]


def _at(r: dict[str, Any], load: float) -> dict[str, Any] | None:
    return next(
        (ld for ld in r["loads"] if ld["rate_pps"] is not None
         and abs(ld["rate_pps"] - load) <= SAME_LOAD * load and ld["plr"] is not None),
        None,
    )  # fmt: skip


def shared_loads(rows: list[dict[str, Any]]) -> list[float]:
    """The loads every sweep measured (the first one's values)."""
    return [ld for ld in _measured(rows[0]) if all(_at(r, ld) is not None for r in rows[1:])]


def compare_text(result: dict[str, Any]) -> list[str]:
    """The sweeps ranked by PDR with their verdicts, then their loss ratio per shared load."""
    rows = sorted(result["experiments"], key=lambda r: r["rank"])
    pdr = f"PDR@{result['pdr_goal'] * 100:g}%"
    lines = [f"sweeps in {result['db']}: {len(rows)} experiment(s), by {pdr} (highest first)"]
    for r in rows:
        ks = ",".join(map(str, r["k"])) or "-"
        dur = f"{r['duration_s']:g} s" if r["duration_s"] else "?"
        lines.append(
            f"#{r['rank']} {r['label']} (experiment {r['experiment_id']}): {pdr} "
            f"{r['pdr_text']}, NDR {r['ndr_text']}; {r['verdict']} (K={ks}, T={dur})"
        )
    if any(r["pdr_at_least"] or r["ndr_at_least"] for r in rows):
        lines.append(
            "  >= : at least this: the highest load tested met the goal, where the SUT's "
            "bound lies was not found"
        )
    if any(r["verdict"] != "GOOD" for r in rows):
        lines.append("  a verdict other than GOOD: 'netassay assess' says why")
    return lines + _loss_lines(rows, result["shared_loads_pps"])


def _loss_lines(rows: list[dict[str, Any]], shared: list[float]) -> list[str]:
    """The loss ratio of each sweep at each load they share (the first ``SHOWN`` ranked)."""
    if not shared:
        return ["they share no load: each one's loss per load is in --json, or 'netassay assess'"]
    shown = rows[:SHOWN]
    head = f"{'load':>12}" + "".join(f" {'#' + str(r['rank']):>10}" for r in shown)
    out = [f"loss ratio (mean PLR over the runs) at the {len(shared)} load(s) they share:", head]
    for load in shared:
        cells = []
        for r in shown:
            ld = _at(r, load)
            cells.append("-" if ld is None else f"{ld['plr']:.2e}")
        out.append(f"{fmt_rate(load):>12}" + "".join(f" {c:>10}" for c in cells))
    if len(rows) > SHOWN:
        out.append(f"  (#{SHOWN + 1} and below: in --json)")
    return out
