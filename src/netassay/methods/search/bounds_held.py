"""A latency-bounded search's loads (``search --max-latency``): at each load it tried,
which bound held, trial by trial: the loss against each goal's ratio, and the latency
percentile against the bound (``counters["search"]``: ``latency`` and each goal's
``loss`` and ``latency``). A load meets a goal only where both held."""

from __future__ import annotations

from typing import Any

from netassay.shared.search_engine import intended_load
from netassay.shared.search_spec import SearchSpec
from netassay.store.db import Store
from netassay.units import fmt_latency, fmt_rate


def by_load(store: Store, experiment_id: int, spec: SearchSpec) -> dict[str, Any]:
    """Per load tried (in load order): trials used, the worst loss ratio and latency
    percentile of its trials, and per goal how many trials held each bound."""
    assert spec.max_latency is not None
    rows: dict[float, dict[str, Any]] = {}
    for t in store.trials(experiment_id):
        info = t["counters"].get("search", {})
        if t["excluded"] or "latency" not in info:
            continue
        load = intended_load(t)
        row = rows.setdefault(load, {"load_pps": load, "trials": 0, "loss_ratio_max": 0.0,
                                     "latency_max_ns": None, "goals": {}})  # fmt: skip
        row["trials"] += 1
        row["loss_ratio_max"] = max(row["loss_ratio_max"], float(info.get("loss_ratio", 0.0)))
        v = info["latency"].get("value_ns")
        if v is not None:
            row["latency_max_ns"] = (
                v if row["latency_max_ns"] is None else max(row["latency_max_ns"], v)
            )
        for key, g in info.get("goals", {}).items():
            held = row["goals"].setdefault(key, {"loss_held": 0, "latency_held": 0})
            held["loss_held"] += g.get("loss") == "held"
            held["latency_held"] += g.get("latency") == "held"
    b = spec.max_latency
    return {"percentile": b.percentile, "bound_ns": b.bound_ns,
            "loads": [rows[k] for k in sorted(rows)]}  # fmt: skip


def _held(n: int, of: int) -> str:
    return "held" if n == of else ("missed" if n == 0 else f"held {n}/{of}")


def lines(doc: dict[str, Any], spec: SearchSpec) -> list[str]:
    """``by_load`` in words: a line per load, which bound held for each goal."""
    p = f"p{doc['percentile']:g}"
    out = [f"--max-latency {p} <= {fmt_latency(doc['bound_ns'])}: at each load, which bound "
           "held (a load meets a goal only where both held, in every trial):"]  # fmt: skip
    goals = [g.key for g in spec.goals]
    head = f"  {'load':>11} {'trials':>6} {'loss (worst)':>12} {p + ' (worst)':>13}"
    out.append(head + "".join(f"  {k + ' loss':>16} {k + ' latency':>18}" for k in goals))
    for r in doc["loads"]:
        lat = "-" if r["latency_max_ns"] is None else fmt_latency(round(r["latency_max_ns"]))
        n = r["trials"]
        line = f"  {fmt_rate(r['load_pps']):>11} {n:>6} {r['loss_ratio_max']:>12.2e} {lat:>13}"
        for k in goals:
            g = r["goals"].get(k, {"loss_held": 0, "latency_held": 0})
            loss, late = _held(g["loss_held"], n), _held(g["latency_held"], n)
            line += f"  {loss:>16} {late:>18}"
        out.append(line)
    return out
