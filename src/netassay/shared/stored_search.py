"""A search as its store holds it: its trials replayed into MLRsearch (what it found,
complete or not), and the PDR the newest one found as other methods ask for it (a
soak's ``--rate 90%pdr``, a sweep's ``--at``, burst's, recovery's and reconfig's
``--throughput``/``--rate``: ``shared/throughput.py``), read from the store: the search
and they share this module, and no method asks the search for it. MLRsearch is imported
only when a store is read (``shared/search_engine.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netassay.errors import UsageError
from netassay.shared.search_spec import SearchSpec
from netassay.store.db import Experiment, Store

if TYPE_CHECKING:
    from netassay.shared.search_engine import SearchOutcome

KIND = "search"  # the kind of experiment a search is stored as
PDR = 0.005  # the goal loss ratio a share of the PDR is of, when the search had it


def stored_outcome(store: Store, exp: Experiment) -> SearchOutcome:
    """Replay a stored search's trials into MLRsearch: what it found, complete or not."""
    from netassay.shared import search_engine  # deferred: MLRsearch (0.3 s)

    spec = SearchSpec.from_json(exp.config["search"])
    return search_engine.run_search(spec, None, stored=store.trial_records(exp.id), live=False)


def stored_searches(store: Store) -> Iterator[tuple[Experiment, SearchOutcome]]:
    """Each netassay search in ``store`` (oldest first) and what it found."""
    for exp in store.experiments(kinds=(KIND,)):
        if "search" in exp.config:
            yield exp, stored_outcome(store, exp)


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
