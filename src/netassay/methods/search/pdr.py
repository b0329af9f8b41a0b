"""The PDR a stored search found, as other methods ask for it (a soak's ``--rate 90%pdr``,
a sweep's and the latency command's ``--at``): through the registry
(``registry.method("search").pdr_rate``), so that no method imports the search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netassay.errors import UsageError
from netassay.methods.search.view import stored_searches
from netassay.store.db import Store

PDR = 0.005  # the goal loss ratio a share of the PDR is of, when the search had it


def pdr_rate(
    share: float, db: str | None, bidirectional: bool = False
) -> tuple[float, dict[str, Any]]:
    """``share`` of the PDR (the conditional throughput of its PDR@0.5% goal, else of
    its smallest PDR goal) of the newest search stored in ``db``, and where it came
    from; a UsageError when there is none. ``bidirectional``: a load per direction of
    both at once, from a --bidirectional search's PDR (both directions' sum), halved."""
    if db is None or not Path(db).is_file():
        raise UsageError(
            f"--rate {share * 100:g}%pdr needs a stored search",
            "no --db names a store that exists" if db is None else f"{db} does not exist",
            "run 'netassay search --db FILE' first, or give a rate like 200k",
        )
    with Store(db, readonly=True) as st:
        found = list(stored_searches(st))
    goals = [
        (exp, g)
        for exp, out in found
        for g in out.goals
        if g.goal.loss_ratio > 0 and g.conditional_pps
    ]
    if not goals:
        raise UsageError(
            f"--rate {share * 100:g}%pdr: no PDR in {db}",
            "it holds no search that found a PDR's conditional throughput",
            "run 'netassay search --db FILE' first, or give a rate like 200k",
        )
    newest = max(exp.id for exp, _ in goals)
    # its PDR@0.5% (CSIT's and PASTRAMI's PDR), else its smallest PDR goal
    exp, g = min(((e, g) for e, g in goals if e.id == newest),
                 key=lambda eg: (eg[1].goal.loss_ratio != PDR, eg[1].goal.loss_ratio))  # fmt: skip
    both = bool(exp.config.get("bidirectional"))
    if both and not bidirectional:
        raise UsageError(
            f"--rate {share * 100:g}%pdr: the newest search in {db} is --bidirectional",
            "its PDR is both directions' aggregate, not a load of one direction",
            "run a one-way search into that store, add --bidirectional, or give a rate "
            "like 200k",
        )  # fmt: skip
    if bidirectional and not both:
        raise UsageError(
            f"--rate {share * 100:g}%pdr with --bidirectional: the newest search in {db} "
            "is one-way",
            "its PDR is one direction's, not what both directions at once forward",
            "run 'netassay search --bidirectional' into that store, or give a rate like 200k",
        )  # fmt: skip
    assert g.conditional_pps  # every goal kept above has one
    pdr = float(g.conditional_pps)
    where = {"search_experiment": exp.id, "goal": g.goal.key, "pdr_pps": pdr}
    return share * pdr / (2 if both else 1), where
