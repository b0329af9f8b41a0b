"""A latency-bounded search's loads (``search --max-latency``): at each load it tried,
which bound held, trial by trial: the loss against each goal's ratio, and the latency
percentile against the bound (``counters["search"]``: ``latency`` and each goal's
``loss`` and ``latency``). A load meets a goal only where both held."""

from __future__ import annotations

from typing import TypedDict

from netassay.shared.search_engine import intended_load
from netassay.shared.search_spec import SearchSpec
from netassay.store.db import Store
from netassay.units import fmt_latency, fmt_rate


class Held(TypedDict):
    """A goal at one load: how many of its trials held the loss bound and the latency
    bound."""

    loss_held: int
    latency_held: int


class LoadHeld(TypedDict):
    """One load tried: its trials used, their worst loss ratio and latency percentile
    (None: none measured), and each goal's ``Held`` by its key."""

    load_pps: float
    trials: int
    loss_ratio_max: float
    latency_max_ns: float | None
    goals: dict[str, Held]


class ByLoad(TypedDict):
    """``by_load``: the bound (its percentile and ns) and each load tried, in load order;
    a dict, as it is built and as --json writes it (``latency_bound``)."""

    percentile: float
    bound_ns: float
    loads: list[LoadHeld]


def by_load(store: Store, experiment_id: int, spec: SearchSpec) -> ByLoad:
    """Per load tried (in load order): trials used, the worst loss ratio and latency
    percentile of its trials, and per goal how many trials held each bound."""
    assert spec.max_latency is not None
    rows: dict[float, LoadHeld] = {}
    for t in store.trials(experiment_id):
        info = t["counters"].get("search", {})
        if t["excluded"] or "latency" not in info:
            continue
        load = intended_load(t)
        fresh: LoadHeld = {"load_pps": load, "trials": 0, "loss_ratio_max": 0.0,
                           "latency_max_ns": None, "goals": {}}  # fmt: skip
        row = rows.setdefault(load, fresh)
        row["trials"] += 1
        row["loss_ratio_max"] = max(row["loss_ratio_max"], float(info.get("loss_ratio", 0.0)))
        v = info["latency"].get("value_ns")
        if v is not None:
            row["latency_max_ns"] = (
                v if row["latency_max_ns"] is None else max(row["latency_max_ns"], v)
            )
        for key, g in info.get("goals", {}).items():
            held = row["goals"].setdefault(key, Held(loss_held=0, latency_held=0))
            held["loss_held"] += g.get("loss") == "held"
            held["latency_held"] += g.get("latency") == "held"
    b = spec.max_latency
    return {"percentile": b.percentile, "bound_ns": b.bound_ns,
            "loads": [rows[k] for k in sorted(rows)]}  # fmt: skip


def _held(n: int, of: int) -> str:
    return "held" if n == of else ("missed" if n == 0 else f"held {n}/{of}")


def lines(doc: ByLoad, spec: SearchSpec) -> list[str]:
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
            g = r["goals"].get(k, Held(loss_held=0, latency_held=0))
            loss, late = _held(g["loss_held"], n), _held(g["latency_held"], n)
            line += f"  {loss:>16} {late:>18}"
        out.append(line)
    return out
