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

from netassay import methods as registry
from netassay.campaign.spec import Campaign, describe_cell
from netassay.methods.base import Plan
from netassay.params import request_from
from netassay.shared.rates import in_frames
from netassay.units import fmt_duration


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


def cell_settings(c: Campaign, cell: int) -> dict[str, Any]:
    """A cell's settings with its loads in frames/s (written in bit/s or as shares, they
    are converted as its command will: ``shared.rates.in_frames``)."""
    return in_frames(registry.method(c.method).request, c.settings(cell))


def cell_plan(c: Campaign, cell: int) -> Plan:
    """What one cell runs, as its method plans it from the cell's settings."""
    m = registry.method(c.method)
    return m.plan(request_from(m.request, cell_settings(c, cell)))


def cell_trials(c: Campaign, cell: int) -> int | None:
    """Planned trials of one cell (an accept cell: its runs; None: a search decides as
    it goes)."""
    return cell_plan(c, cell).trials


def cell_estimate_s(c: Campaign, cell: int) -> float:
    """How long one cell takes: its trials (a search: the worst case) plus its setup."""
    return cell_plan(c, cell).estimate_s + registry.method(c.method).cell_setup_s


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
        s = cell_settings(c, i)
        what = describe_cell(c.cells[i])
        brief = registry.method(c.method).cell_brief(s)
        if brief:
            what += f"  [{brief}]"
        n = "varies" if trials[i] is None else str(trials[i])
        lines.append(f"{i + 1:>4}  {what:<47} {n:>6}  {fmt_duration(est[i])}")
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
            else " planned (plus those of the cells whose trials are decided as they go)"
        ),
        f"estimated time: {fmt_duration(total_s / max(1, workers))}"
        + (f" on {workers} testbeds" if workers > 1 else " on one testbed")
        + (" (those cells: as estimated by their method)" if None in planned else ""),
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
