"""A campaign's run order and its time: pure.

Each repetition of the matrix is a block; within a block the cells run in an order drawn
from the campaign's seed, so that drift over time (a neighbour's load, a warming host)
falls on every factor alike instead of masquerading as one's effect. The seed is recorded
with the campaign: the same seed gives the same order.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from typing import Any

from netassay.campaign.spec import Campaign, describe_cell
from netassay.methods.sweep.plan import (
    ACCEPT_SETUP_S,
    RTT_SETUP_S,
    TRIAL_OVERHEAD_S,
    Plan,
    accept_estimate_s,
    accept_runs,
    estimate_s,
    rtt_estimate_s,
)
from netassay.units import fmt_duration, fmt_rate, parse_duration, parse_pause, parse_rates

# per cell, beside its trials: the cell's process, the testbed built and removed and the
# environment captured (~2 s here), and the generator's peak probe (3 x 0.5 s, ~2 s)
CELL_SETUP_S = 4.0
SEARCH_NOMINAL_MAX_PPS = 600_000.0  # a search's max load when the file leaves it to the peak


@dataclass(frozen=True)
class Slot:
    """One experiment of the campaign: a cell in a block (repetition), at a position."""

    position: int  # 0-based, in run order over the whole campaign
    block: int  # the repetition it belongs to (0-based)
    cell: int  # the cell's index in the campaign's cell list

    def key(self, campaign: str) -> str:
        """The experiment's key in the store (one experiment per cell and block)."""
        return f"campaign-{campaign}-b{self.block + 1}-c{self.cell + 1}"


def new_seed() -> int:
    return secrets.randbits(32)


def run_order(cells: int, repetitions: int, seed: int) -> list[Slot]:
    """Blocked, randomized order: every cell once per block, shuffled within each block
    by a generator seeded with ``seed`` (reproducible across runs and machines)."""
    rng = random.Random(seed)
    out: list[Slot] = []
    for block in range(repetitions):
        perm = list(range(cells))
        rng.shuffle(perm)
        out += [Slot(len(out) + j, block, c) for j, c in enumerate(perm)]
    return out


def sweep_plan(settings: dict[str, Any]) -> Plan:
    return Plan(
        tuple(parse_rates(_text(settings["rates"]))),
        int(settings["runs"]),
        parse_duration(str(settings["duration"])),
        parse_pause(str(settings.get("settle", "0.5s"))),
    )


def _text(rates: Any) -> str:
    return ",".join(str(r) for r in rates) if isinstance(rates, list) else str(rates)


def cell_trials(c: Campaign, cell: int) -> int | None:
    """Planned trials of one cell (an accept cell: its runs; None: a search decides as
    it goes)."""
    if c.method == "accept":
        return accept_runs(c.settings(cell))
    if c.method == "rtt":
        return int(c.settings(cell)["runs"])
    if c.method != "sweep":
        return None
    return len(sweep_plan(c.settings(cell)).trials())


def cell_estimate_s(c: Campaign, cell: int) -> float:
    """How long one cell takes: its trials (a search: the worst case) plus its setup."""
    s = c.settings(cell)
    if c.method == "sweep":
        return estimate_s(sweep_plan(s)) + CELL_SETUP_S
    if c.method == "accept":
        return accept_estimate_s(s) + ACCEPT_SETUP_S
    if c.method == "rtt":
        return rtt_estimate_s(s) + RTT_SETUP_S
    return _search_estimate_s(s) + CELL_SETUP_S


def _search_estimate_s(s: dict[str, Any]) -> float:
    from netassay.methods.search import engine as E
    from netassay.methods.search.spec import GoalOptions, SearchSpec, make_goals
    from netassay.units import parse_rate

    def dur(key: str) -> float | None:
        return parse_duration(str(s[key])) if key in s else None

    goals = make_goals(
        GoalOptions(
            tuple(s.get("goals", ())),
            s.get("exceed_ratio"),
            s.get("width"),
            dur("initial_duration"),
            dur("final_duration"),
            dur("duration_sum"),
        )
    )
    hi = parse_rate(str(s["max_load"])) if "max_load" in s else SEARCH_NOMINAL_MAX_PPS
    lo = parse_rate(str(s["min_load"])) if "min_load" in s else hi * 0.01
    cap = dur("time_cap") or 1200.0
    est = E.estimate(SearchSpec(goals, lo, hi, cap))
    settle = parse_pause(str(s.get("settle", "0")))
    verify = 0.0
    if s.get("then_verify"):
        runs, loads = int(s.get("verify_runs", 5)), int(s.get("verify_loads", 9))
        vd = dur("verify_duration") or dur("final_duration") or 1.0
        verify = runs * loads * (vd + TRIAL_OVERHEAD_S + settle)
    return est.wall_time_s + est.trials * settle + verify


def describe(c: Campaign, seed: int, seed_origin: str, workers: int = 1) -> str:
    """The campaign resolved: settings, factors, cells, run order and the time it takes."""
    slots = run_order(len(c.cells), c.repetitions, seed)
    est = [cell_estimate_s(c, i) for i in range(len(c.cells))]
    trials = [cell_trials(c, i) for i in range(len(c.cells))]
    total_s = sum(est[s.cell] for s in slots)
    lines = [
        f"campaign {c.name} ({c.path}): method {c.method}"
        + (f" - {c.description}" if c.description else ""),
        f"fixed: {describe_cell(c.fixed)}",
        "factors: "
        + ("; ".join(f"{k} = {', '.join(map(str, v))}" for k, v in c.factors.items()) or "none"),
        f"cells: {len(c.cells)} ({'listed in the file' if c.explicit else 'full factorial'})"
        f" x {c.repetitions} repetition(s) = {len(slots)} experiments",
        f"seed: {seed} ({seed_origin})",
        "",
        "cell  settings" + " " * 40 + "trials  time",
    ]
    for i in range(len(c.cells)):
        s = c.settings(i)
        what = describe_cell(c.cells[i])
        if c.method == "sweep":
            p = sweep_plan(s)
            what += (
                f"  [{fmt_rate(p.rates_pps[0])}..{fmt_rate(p.rates_pps[-1])}, "
                f"{len(p.rates_pps)} loads x {p.runs} runs x {p.duration_s:g} s]"
            )
        elif c.method == "accept":
            what += f"  [contract {s.get('contract', '?')}, {s['runs']} runs x {s['duration']}]"
        n = "search" if trials[i] is None else str(trials[i])
        lines.append(f"{i + 1:>4}  {what:<48}{n:>6}  {fmt_duration(est[i])}")
    lines += ["", "run order (block: cells):"]
    for b in range(c.repetitions):
        lines.append(f"  {b + 1}: " + " ".join(str(s.cell + 1) for s in slots if s.block == b))
    planned = [trials[s.cell] for s in slots]
    known = sum(t for t in planned if t is not None)
    lines += [
        "",
        f"trials: {known}"
        + (
            " planned"
            if None not in planned
            else " planned (plus the searches', decided as they go)"
        ),
        f"estimated time: {fmt_duration(total_s / max(1, workers))}"
        + (f" on {workers} testbeds" if workers > 1 else " on one testbed")
        + (" (searches: worst case)" if c.method == "search" else ""),
    ]
    return "\n".join(lines)


def plan_json(c: Campaign, seed: int, seed_origin: str) -> dict[str, Any]:
    slots = run_order(len(c.cells), c.repetitions, seed)
    return {
        "campaign": c.to_json(),
        "seed": seed,
        "seed_origin": seed_origin,
        "cells": [
            {
                "cell": i + 1,
                "factors": c.cells[i],
                "settings": c.settings(i),
                "trials": cell_trials(c, i),
                "estimate_s": round(cell_estimate_s(c, i), 1),
            }
            for i in range(len(c.cells))
        ],
        "order": [
            {
                "position": s.position + 1,
                "block": s.block + 1,
                "cell": s.cell + 1,
                "key": s.key(c.name),
            }
            for s in slots
        ],
        "estimate_s": round(sum(cell_estimate_s(c, s.cell) for s in slots), 1),
    }
