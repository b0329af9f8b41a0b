"""The sweep's analysis of what is stored or imported: PASTRAMI's assessment of each curve
(PASTRAMI files and folders parsed in memory, stores read one experiment at a time)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from netassay.analysis.assess import Assessment, assess_trials
from netassay.analysis.caps import above_cap
from netassay.config import AnalysisConfig
from netassay.errors import InputError
from netassay.methods import lab
from netassay.quality import COUNTER_FAULT, GENERATOR_LIMIT, RATE_OVERSHOOT
from netassay.store import Store
from netassay.store.loads import build_loads
from netassay.store.pastrami import KIND, ParsedColumns, find_result_files, parse_many
from netassay.store.paths import is_store, open_store

# the experiments that are curves: netassay's sweeps and the PASTRAMI files imported
KINDS = ("sweep", KIND)


def assess_columns(cols: ParsedColumns, cfg: AnalysisConfig) -> Assessment:
    """Assess one parsed file: its usable trials, and every load with what was excluded."""
    limit, over = rate_faults = cols.rate_faults()
    counted = cols.count_faults()
    bad = limit | over | counted
    li = cols.load_index
    use = ~bad
    excluded_trials = int(np.count_nonzero(bad))
    k_used = np.bincount(li[use], minlength=cols.k.size) if excluded_trials else cols.k
    faults = [
        (int(i), float(cols.rate_pps[i]), _fault(lim, cnt))
        for i, lim, cnt in zip(
            li[bad].tolist(), limit[bad].tolist(), counted[bad].tolist(), strict=True
        )
    ]
    rates, ku = cols.config["rates_pps"], k_used.tolist()
    loads = build_loads(rates, [(i, rates[i], ku[i]) for i in range(len(ku)) if ku[i]], faults)
    sent, received = cols.sent, cols.delivered()
    if excluded_trials:
        li, sent, received = li[use], sent[use], received[use]
    return assess_trials(
        li,
        cols.rate_pps[li],
        sent,
        received,
        cfg,
        source=cols.source,
        label=cols.label,
        metadata=cols.metadata,
        duration_s=cols.duration_s,
        trial_warnings=int(np.count_nonzero(cols.warned(rate_faults))),
        excluded_trials=excluded_trials,
        loads=loads,
    )


def _fault(limit: bool, counted: bool) -> str:
    """The fault that excludes an imported trial (the importer's warnings say the same)."""
    if limit:
        return GENERATOR_LIMIT
    return COUNTER_FAULT if counted else RATE_OVERSHOOT


def assess_store(store: Store, cfg: AnalysisConfig) -> Iterator[Assessment]:
    """Assess every experiment of a store; only one experiment's trials in memory at once.

    An experiment with planned loads or stored trials is assessed even when none of its
    loads has a usable trial (all excluded, or a sweep that has only just started).
    """
    for exp in store.experiments(kinds=KINDS):
        a = assess_experiment(store, exp, cfg)
        if a is not None:
            yield a


def assess_experiment(store: Store, exp: Any, cfg: AnalysisConfig) -> Assessment | None:
    """PASTRAMI's assessment of one stored sweep (None when it plans no load)."""
    cols = store.trial_arrays(exp.id)
    if len(cols.loads) == 0:
        return None
    a = assess_trials(
        cols.load_index,
        cols.rate_pps,
        cols.sent,
        cols.received,
        cfg,
        source=exp.source,
        label=exp.label,
        metadata={**exp.metadata, "experiment_id": exp.id},
        duration_s=exp.config.get("duration_s"),
        trial_warnings=cols.warning_trials,
        excluded_trials=cols.excluded_trials,
        loads=cols.loads,
    )
    return with_caps(a, exp)


def with_caps(a: Assessment, exp: Any) -> Assessment:
    """``a`` with its bounds that lie above a cap netassay installed on the SUT said, by
    how much and why (``analysis.caps``): a note, and ``above_cap`` in its JSON."""
    caps = lab.installed_caps(exp.metadata, bool(exp.config.get("bidirectional")))
    pdr_name = f"PDR@{a.params['pdr'] * 100:g}%"
    rates = exp.metadata.get("rates")  # loads written in bit/s: the excess said so too
    found = tuple(
        x for x in (above_cap(pdr_name, a.pdr.rate_pps, caps, a.duration_s, rates,
                              a.params["pdr"]),
                    above_cap("NDR", a.ndr.rate_pps, caps, a.duration_s, rates))
        if x is not None
    )  # fmt: skip
    if not found:
        return a
    return replace(a, above_cap=found, flags=[*a.flags, *(x.line() for x in found)])


def iter_assessments(paths: Iterable[str | Path], cfg: AnalysisConfig) -> Iterator[Assessment]:
    """Files and folders are parsed in memory; .db files are read from the store."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("nothing to assess", "no file, folder or .db was given", "name one")
    for p in paths:
        if p.is_file() and is_store(p):
            with open_store(p) as store:
                yield from assess_store(store, cfg)
        else:
            for cols in parse_many(find_result_files([p])):
                yield assess_columns(cols, cfg)
