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
from netassay.quality import COUNTER_FAULT, GENERATOR_LIMIT, RATE_OVERSHOOT
from netassay.shared import lab
from netassay.shared.sweep_latency import latency_rows
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
        metadata={
            **exp.metadata,
            "experiment_id": exp.id,
            **({"schedule": sched} if (sched := _schedule(store, exp)) else {}),
        },
        duration_s=exp.config.get("duration_s"),
        trial_warnings=cols.warning_trials,
        excluded_trials=cols.excluded_trials,
        loads=cols.loads,
    )
    if exp.config.get("latency"):  # sweep --latency: its percentiles per load
        a = replace(a, latency=tuple(latency_rows(store, exp.id)))
    return with_caps(a, exp)


def _schedule(store: Store, exp: Any) -> str | None:
    """The frame schedule netassay-gen kept in a measured sweep's trials (imports have
    none): ``schedule_line`` of their generator counters."""
    if exp.kind != "sweep":
        return None
    return schedule_line([(t.get("counters") or {}).get("generator") or {}
                          for t in store.trials(exp.id)])  # fmt: skip


def _span(values: list[float], fmt: Any) -> str:
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def schedule_line(gens: list[dict[str, Any]]) -> str | None:
    """What the generator's trials actually sent, over the trials (a range where they
    differ): frames per send call or flush of live frames, the gap between two frames'
    times, the bound on a catch-up after a stall, and the worst p99.9 lateness. None when
    no trial recorded it (an older generator). Pure."""
    kept = [g for g in gens if g.get("batch") and g.get("spacing_ns")]
    if not kept:
        return None
    techniques = sorted({str(g.get("technique")) for g in kept if g.get("technique")})
    batch = _span([float(g["batch"]) for g in kept], lambda v: f"{v:.0f}")
    gap = _span([float(g["spacing_ns"]) / 1e3 for g in kept], lambda v: f"{v:.3g}")
    out = f"{'/'.join(techniques) or 'sent'}: batches of {batch} frame(s), {gap} us apart"
    ups = {up for g in kept if (up := g.get("catch_up"))}
    if ups:
        out += f", catch-up at most {_span([float(u) for u in ups], lambda v: f'{v:g}')}x"
    late = [float(g["lateness_p999_ns"]) for g in kept if g.get("lateness_p999_ns") is not None]
    if late:
        worst = max(late)
        said = f"{worst / 1e6:.3g} ms" if worst >= 1e6 else f"{worst / 1e3:.3g} us"
        out += f"; p99.9 lateness up to {said}"
    return out


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
    files = [Path(p) for p in paths]
    if not files:
        raise InputError("nothing to assess", "no file, folder or .db was given", "name one")
    for p in files:
        if p.is_file() and is_store(p):
            with open_store(p) as store:
                yield from assess_store(store, cfg)
        else:
            for cols in parse_many(find_result_files([p])):
                yield assess_columns(cols, cfg)
