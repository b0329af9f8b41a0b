"""A sweep of loads: trials load by load, K repetitions, each stored the moment it ends
(the sweep's runs, and the verify sweep a search runs after its search).

A crash loses at most the trial in progress; ``resume`` continues the newest unfinished
sweep in the store with its own stored plan and testbed knobs, never repeating a trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from netassay import names, quality
from netassay.config import TestbedConfig
from netassay.counters.sutstate import beside
from netassay.errors import TestbedError, UsageError
from netassay.shared import lab
from netassay.shared.sweep_plan import Plan, eta_s
from netassay.store.db import Experiment, Store
from netassay.testbed import topology
from netassay.testbed.bed import config_from_state, require_root
from netassay.trial.engine import SOURCE, TrialContext, measure, testbed_problem, trials_on
from netassay.trial.hooks import Hooks
from netassay.trial.record import TrialRecord
from netassay.units import fmt_duration, fmt_rate

KIND = "sweep"
RETRIES = 2  # repeat a trial the generator could not pace, at most this often


@dataclass
class Sweep:
    """What a sweep runs: the plan, the testbed knobs and where results go."""

    plan: Plan
    testbed: TestbedConfig
    db: str
    name: str = names.DEFAULT_NAME
    label: str = ""
    check_peak: bool = True
    retries: int = RETRIES
    progress: Callable[[str], None] | None = None
    note: Callable[[str], None] | None = None  # what is being done before trials run
    experiment_id: int | None = None
    stored: int = 0
    warnings: list[str] = field(default_factory=list)
    # the lowest load whose trial stayed a generator limit after its repeats: the
    # generator's reach on this host now; above it such a trial is not repeated again
    beyond_reach: float | None = None
    latency: bool = False  # each trial keeps the sink's latency histogram
    bidirectional: bool = False  # both directions at once (trial.bidirectional)
    at: dict[str, Any] | None = None  # --at: the PDR shares, the PDR and its search
    rates: dict[str, Any] | None = None  # loads written in bit/s or as shares (shared.rates)
    hooks: Hooks | None = None  # commands run around each trial (trial.hooks)
    auto: dict[str, Any] | None = None  # no loads given: the MRR and reach they came from


def refuse_bidirectional(cfg: Any) -> None:
    """``--bidirectional`` where it can be honoured, or one line saying why not: the
    embedded router or bridge or an external testbed, frames of one size, the XDP sink."""
    why = None
    if topology.is_external(cfg):
        pass  # its sink is XDP, its frames of one size (testbed.external.validate)
    elif cfg.sut == topology.XDP_ROUTER:
        why = "--sut xdp-router", "the XDP router forwards one direction only"
    elif cfg.imix or getattr(cfg, "pcap", None):
        why = "--imix" if cfg.imix else "--pcap", "each end's sink counts frames of one size"
    elif cfg.sink != "xdp":
        why = f"--sink {cfg.sink}", "each end counts with the XDP sink"
    if why is not None:
        raise UsageError(
            f"--bidirectional with {why[0]}", f"{why[1]} (not available yet)",
            "drop one of them (--bidirectional runs on the embedded router or bridge, "
            "or an external testbed)",
        )  # fmt: skip


def sweep_config(sw: Sweep) -> dict[str, object]:
    latency: dict[str, object] = {"latency": True} if sw.latency else {}  # absent: as before
    if sw.at is not None:
        latency["at_pdr"] = sw.at
    if sw.bidirectional:  # absent: one direction, as before
        latency["bidirectional"] = True
    if sw.auto is not None:  # absent: the loads were given
        latency["auto_loads"] = sw.auto
    return {
        "rates_pps": list(sw.plan.rates_pps),
        "runs": sw.plan.runs,
        "duration_s": sw.plan.duration_s,
        "settle_s": sw.plan.settle_s,
        "testbed": asdict(sw.testbed),
        "testbed_name": sw.name,
        **latency,
    }


def stored_plan(exp: Experiment) -> Plan:
    c = exp.config
    return Plan(tuple(c["rates_pps"]), int(c["runs"]), float(c["duration_s"]), c["settle_s"])


def _ours(store: Store) -> list[Experiment]:
    return [e for e in store.experiments(kinds=(KIND,)) if e.source == SOURCE]


def unfinished(
    store: Store, experiment_id: int | None = None
) -> tuple[Experiment, Plan, TestbedConfig] | None:
    """The sweep to resume: ``experiment_id`` when given (it must be an unfinished
    netassay sweep), else the newest netassay sweep that still has trials to run."""
    if experiment_id is not None:
        exp = store.experiment(experiment_id)
        if exp.id not in {e.id for e in _ours(store)}:
            raise UsageError(
                f"experiment {experiment_id} in {store.path} is not a netassay sweep",
                f"it is a '{exp.kind}' from '{exp.source}'",
                "give the id of a sweep (see 'netassay assess --json')",
            )
        if not stored_plan(exp).remaining(store.done_trials(exp.id)):
            raise UsageError(
                f"experiment {experiment_id} is complete",
                "every planned trial is stored",
                "start a new sweep without --resume",
            )
        return exp, stored_plan(exp), config_from_state({"config": exp.config["testbed"]})
    for exp in reversed(_ours(store)):
        if stored_plan(exp).remaining(store.done_trials(exp.id)):
            return exp, stored_plan(exp), config_from_state({"config": exp.config["testbed"]})
    return None


def resume_sweep(db: str, name: str | None = None, experiment_id: int | None = None) -> Sweep:
    """Rebuild the Sweep to resume from ``db``, on the testbed it ran on. A ``name``
    other than the stored testbed's is refused (it would leave that testbed orphaned)."""
    with Store(db, create=False) as store:
        found = unfinished(store, experiment_id)
    if found is None:
        raise UsageError(
            f"nothing to resume in {db}",
            "every sweep in it is complete (or it has none)",
            "start a new sweep without --resume",
        )
    exp, plan, cfg = found
    stored = exp.config.get("testbed_name", names.DEFAULT_NAME)
    if name is not None and name != stored:
        raise UsageError(
            f"--name {name} conflicts with the sweep to resume",
            f"experiment {exp.id} ran on testbed '{stored}'",
            "drop --name (resume uses the sweep's own testbed)",
        )
    sw = Sweep(plan, cfg, db, stored, exp.label)
    sw.experiment_id = exp.id
    sw.latency = bool(exp.config.get("latency", False))
    sw.bidirectional = bool(exp.config.get("bidirectional", False))
    return sw


def run(sw: Sweep) -> None:
    """Run (or resume) the sweep; every trial is stored as soon as it ends."""
    topology.validate(sw.testbed)
    require_root("a sweep")
    note = sw.note or (lambda line: None)
    with lab.open_testbed(sw.name, sw.testbed, "a sweep", note) as tb:
        new = sw.check_peak and sw.experiment_id is None and not sw.plan.auto
        if not sw.plan.auto:  # chosen loads are checked as they are chosen
            lab.check_line_rate(tb.state, sw.plan.rates_pps)
        peak = lab.check_peak(tb, sw.plan.rates_pps, note) if new else None
        with (
            Store(sw.db) as store,
            trials_on(tb, latency=sw.latency, bidirectional=sw.bidirectional) as ctx,
        ):
            if sw.plan.auto:
                rates, sw.auto = lab.auto_loads(ctx, note)
                sw.plan = replace(sw.plan, rates_pps=rates)
            ctx = lab.with_hooks(start(sw, ctx, store, peak), sw.hooks)
            note(LEGEND + (BOTH if sw.bidirectional else ""))
            loop(sw, ctx, store)


def start(sw: Sweep, ctx: TrialContext, store: Store, peak: float | None) -> TrialContext:
    """Create the experiment (or take the one resumed) and record this run with the
    environment as it is now: a resume after a reboot or a change shows in the store."""
    if sw.experiment_id is not None:
        done, total = len(store.done_trials(sw.experiment_id)), sw.plan.count()
        if sw.note:
            sw.note(f"resuming sweep experiment {sw.experiment_id} ('{sw.label}') in {sw.db}: "
                    f"{done} of {total} trials stored, {total - done} to run")  # fmt: skip
        ctx, notes = lab.restart_experiment(store, ctx, sw.experiment_id, "sweep", sw.note)
        sw.warnings.extend(notes)
        return ctx
    sw.experiment_id, ctx = lab.start_experiment(
        store, ctx, kind=KIND, name=sw.name,
        label=sw.label or default_label(sw), config=sweep_config(sw),
        metadata={"rates": sw.rates} if sw.rates else {}, peak=peak,
    )  # fmt: skip
    return ctx


def default_label(sw: Sweep) -> str:
    """The testbed's label; a --bidirectional sweep's says so (its loads are aggregate)."""
    both = " bidirectional" if sw.bidirectional else ""
    return lab.default_label(sw.testbed, sw.name) + both


def measure_with_retries(sw: Sweep, ctx: TrialContext, i: int, k: int, rate: float) -> TrialRecord:
    """One trial; repeated (at most ``sw.retries`` times) when it is a measurement fault
    (never when a signal cut it short). The stored record names every discarded attempt
    and why."""
    discarded: list[str] = []
    for attempt in range(sw.retries + 1):
        if attempt:
            time.sleep(sw.plan.settle_s)
        rec = measure(ctx, i, k, rate, sw.plan.duration_s)
        faults = quality.faults(rec.warnings)
        reach = quality.generator_bound(faults)
        if reach and (attempt == sw.retries or _beyond_reach(sw, rate)):
            sw.beyond_reach = min(rate, sw.beyond_reach or rate)
            break
        if not faults or attempt == sw.retries or lab.signalled(rec):
            break
        if testbed_problem(ctx) is not None:  # gone: store this one, the next trial says so
            break
        lost = rec.sent - rec.forwarded
        discarded.append(f"attempt {attempt + 1} discarded ({lost} lost): {'; '.join(faults)}")
    return replace(rec, warnings=[*rec.warnings, *discarded], run_id=ctx.run_id)


def _beyond_reach(sw: Sweep, rate: float) -> bool:
    """At or above a load the generator already could not pace: repeating it would
    only cost time (the analysis says the sweep is generator-bound there)."""
    return sw.beyond_reach is not None and rate >= sw.beyond_reach


def loop(sw: Sweep, ctx: TrialContext, store: Store) -> None:
    """Every trial of the plan not stored yet, each stored as it ends."""
    assert sw.experiment_id is not None
    done = store.done_trials(sw.experiment_id)
    todo = sw.plan.remaining(done)
    t0 = time.monotonic()
    for n, (i, k, rate) in enumerate(todo):
        if n and sw.plan.settle_s:
            time.sleep(sw.plan.settle_s)
        try:
            rec = measure_with_retries(sw, ctx, i, k, rate)
        except TestbedError as exc:  # taken apart under the sweep: what is stored stays
            then = f"{exc.todo}, then " if exc.todo else ""
            raise TestbedError(
                exc.what, exc.why,
                f"{sw.stored} trial(s) of this run are stored in {sw.db}; {then}continue "
                f"with 'netassay sweep --db {sw.db} --resume'",
            ) from exc  # fmt: skip
        store.add_trial(sw.experiment_id, rec)  # committed now: a crash loses only the next
        sw.stored += 1
        if sw.progress:
            left = eta_s(time.monotonic() - t0, n + 1, len(todo), sw.plan)
            sw.progress(progress_line(sw, rec, len(done) + n + 1, left))


LEGEND = (
    "each trial: [done/total] load, run, frames sent and lost; '!' marks a trial with a "
    "warning (stored with it: see 'netassay assess'), 'excluded' a measurement fault "
    "kept out of the statistics"
)


BOTH = (
    "; --bidirectional: each load and count is both directions' sum (FD.io CSIT's "
    "aggregate), the load per direction half of it"
)


def progress_line(sw: Sweep, rec: TrialRecord, n: int, left_s: float) -> str:
    lost = rec.sent - rec.forwarded
    flag = " excluded" if rec.excluded else (" !" if rec.warnings else "")
    return (
        f"[{n}/{sw.plan.count()}] load {rec.load_index + 1}/{sw.plan.loads} "
        f"{fmt_rate(rec.rate_pps)} run {rec.repetition + 1}/{sw.plan.runs}: sent {rec.sent} "
        f"lost {lost} (PLR {lost / max(rec.sent, 1):.2e}){flag}; "
        f"ETA {fmt_duration(left_s)}" + beside(rec.counters, rec.loss_location)
    )
