"""The soak: one long trial at a fixed load, run as back-to-back segments, each a trial
of the trial engine (every quality rule applies) read every second while it runs
(``sampler``) and stored the moment it ends; a faulty segment is repeated as a sweep's
trial is, and stored excluded when it stays faulty. Between segments the counters are
read and the generator restarted: a gap of about 0.1-0.3 s, measured and stored with
each segment (``gap_before_s``).

``resume`` continues the newest unfinished soak of a store on its own testbed, with its
own rate, segments and goal, never repeating a stored segment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from netassay import names, quality
from netassay.config import Config, TestbedConfig
from netassay.errors import UsageError
from netassay.methods.base import RunOptions
from netassay.methods.soak import series
from netassay.methods.soak import store as soak_store
from netassay.methods.soak.request import RETRIES, SoakRequest, pdr_share
from netassay.methods.soak.sampler import LockedSink, SampledBed, Sampler
from netassay.shared import lab, stored_search
from netassay.shared.sweep_run import refuse_bidirectional
from netassay.store.db import Store
from netassay.testbed import topology
from netassay.testbed.bed import config_from_state, require_root
from netassay.trial.engine import TrialContext, frames_counted, measure, trials_on
from netassay.trial.hooks import Hooks
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate, parse_rate

Line = Callable[[str], None]


def _quiet(line: str) -> None:
    return None


@dataclass
class Soak:
    """What a soak runs: its load, length, segments and goal, the testbed, the store."""

    load: str  # as the user wrote it: '200k', '90%pdr'
    rate_pps: float
    duration_s: float
    segment_s: float
    goal: float
    testbed: TestbedConfig
    db: str
    name: str = names.DEFAULT_NAME
    label: str = ""
    check_peak: bool = True
    retries: int = RETRIES
    bidirectional: bool = False  # both directions at once, rate_pps each (trial.bidirectional)
    rate_from: dict[str, Any] | None = None  # the stored search a %pdr load came from
    rates: dict[str, Any] | None = None  # a load written in bit/s or as a share (shared.rates)
    progress: Line = _quiet
    note: Line = _quiet
    experiment_id: int | None = None
    stored: int = 0
    seconds: list[series.Second] = field(default_factory=list)  # the soak's so far
    hooks: Hooks | None = None  # commands run around each segment (trial.hooks)

    @property
    def lengths(self) -> list[float]:
        return series.segment_lengths(self.duration_s, self.segment_s)


def prepare(req: SoakRequest, options: RunOptions, cfg: Config) -> Soak:
    """The Soak to run: a resume takes the stored one (its load, segments, goal and
    testbed); a new one the request, its %pdr load looked up in --db."""
    retries = RETRIES if options.retries is None else options.retries
    lab.check_request(options.name, retries, options.experiment, options.resume, "soak")
    if options.resume:
        db = lab.resume_store(options.db, options.testbed_flags, "soak")
        soak = resume_soak(db, options.name, options.experiment)
    else:
        req.validate()
        assert req.rate is not None
        share = pdr_share(req.rate)
        if share is None:
            rate, rate_from = parse_rate(req.rate), None
        else:
            rate, rate_from = stored_search.pdr_rate(share, options.db, req.bidirectional)
        name = options.name or names.DEFAULT_NAME
        testbed = lab.running_config(name, cfg.testbed, options)
        soak = Soak(
            req.rate,
            rate,
            req.duration_s,
            req.segment_s,
            req.goal,
            testbed,
            lab.store_path(options.db),
            name,
            options.label,
            options.check_peak,
            rate_from=rate_from,
            rates=options.rates,
            bidirectional=req.bidirectional,
        )
    soak.retries = retries
    soak.hooks = lab.hooks_of(options)
    topology.validate(soak.testbed)
    if soak.bidirectional:
        refuse_bidirectional(soak.testbed)
    return soak


def soak_config(s: Soak) -> dict[str, Any]:
    return {
        "load": s.load,
        "rate_pps": s.rate_pps,
        "duration_s": s.duration_s,
        "segment_s": s.segment_s,
        "goal": s.goal,
        "rate_from": s.rate_from,
        "testbed": asdict(s.testbed),
        "testbed_name": s.name,
        **({"bidirectional": True} if s.bidirectional else {}),  # absent: one way
    }


def resume_soak(db: str, name: str | None = None, experiment_id: int | None = None) -> Soak:
    """The Soak to resume from ``db``, on the testbed it ran on."""
    with Store(db, create=False) as store:
        exp = soak_store.unfinished(store, experiment_id)
        if exp is None:
            raise UsageError(
                f"nothing to resume in {db}",
                "every soak in it is complete (or it has none)",
                "start a new soak without --resume",
            )
        seconds = series.timeline(store.trials(exp.id))
    c = exp.config
    stored = c.get("testbed_name", names.DEFAULT_NAME)
    if name is not None and name != stored:
        raise UsageError(
            f"--name {name} conflicts with the soak to resume",
            f"experiment {exp.id} ran on testbed '{stored}'",
            "drop --name",
        )
    cfg = config_from_state({"config": c["testbed"]})
    soak = Soak(
        c["load"],
        float(c["rate_pps"]),
        float(c["duration_s"]),
        float(c["segment_s"]),
        float(c["goal"]),
        cfg,
        db,
        stored,
        exp.label,
        rate_from=c.get("rate_from"),
        bidirectional=bool(c.get("bidirectional", False)),
    )
    soak.experiment_id, soak.seconds = exp.id, seconds
    return soak


def run(soak: Soak) -> soak_store.StoredSoak:
    """Run (or resume) the soak, every segment stored as it ends; the stored soak."""
    topology.validate(soak.testbed)
    require_root("a soak")
    with lab.open_testbed(soak.name, soak.testbed, "a soak", soak.note) as tb:
        lab.check_line_rate(tb.state, [soak.rate_pps])
        new = soak.check_peak and soak.experiment_id is None
        peak = lab.check_peak(tb, [soak.rate_pps], soak.note) if new else None
        with Store(soak.db) as store, trials_on(tb, bidirectional=soak.bidirectional) as ctx:
            ctx = lab.with_hooks(start(soak, ctx, store, peak), soak.hooks)
            loop(soak, ctx, store)
    with Store(soak.db, readonly=True) as store:
        assert soak.experiment_id is not None
        exp = store.experiment(soak.experiment_id)
        return soak_store.StoredSoak(Path(soak.db), exp, soak_store.soak_summary(store, exp))


def start(soak: Soak, ctx: TrialContext, store: Store, peak: float | None) -> TrialContext:
    """Create the experiment (or take the one resumed), this run recorded."""
    if soak.experiment_id is not None:
        done = len(store.done_trials(soak.experiment_id))
        soak.note(
            f"resuming soak experiment {soak.experiment_id} ('{soak.label}') in "
            f"{soak.db}: {done} of {len(soak.lengths)} segments stored"
        )
        ctx, _ = lab.restart_experiment(store, ctx, soak.experiment_id, "soak", soak.note)
        return ctx
    soak.experiment_id, ctx = lab.start_experiment(
        store,
        ctx,
        kind=soak_store.KIND,
        name=soak.name,
        label=soak.label or _label(soak),
        config=soak_config(soak),
        metadata={
            "rate_pps": soak.rate_pps,
            "goal": soak.goal,
            **({"rates": soak.rates} if soak.rates else {}),
        },
        peak=peak,
    )
    return ctx


def _label(soak: Soak) -> str:
    both = " bidirectional" if soak.bidirectional else ""
    return f"soak {fmt_rate(soak.rate_pps)} {lab.default_label(soak.testbed, soak.name)}{both}"


def measure_segment(
    soak: Soak, ctx: TrialContext, index: int, length_s: float, prev_end: float | None = None
) -> tuple[TrialRecord, float]:
    """Segment ``index``: one trial read every second; repeated (at most
    ``soak.retries`` times) when it is a measurement fault (never when a signal cut it
    short). Its seconds go in ``counters['soak']`` with the gap since the generator of
    the segment before stopped (``prev_end``, monotonic); discarded attempts are named.
    The record, and when its generator stopped."""
    sink = LockedSink(ctx.sink)
    reverse = LockedSink(ctx.reverse) if ctx.reverse is not None else None
    discarded: list[str] = []
    for attempt in range(soak.retries + 1):
        # an external testbed has no sink namespace: its sink is XDP on the rx port
        sampler = Sampler(frames_counted(sink, reverse, ctx.tb.state["namespaces"].get("sink")))
        # SampledBed and LockedSink stand in for the Testbed and the sink counter (each
        # delegates what it does not change through __getattr__): no subclass of either
        run_ctx = replace(ctx, tb=SampledBed(ctx.tb, sampler), sink=sink, reverse=reverse)  # type: ignore[arg-type]
        rec = measure(run_ctx, 0, index, soak.rate_pps, length_s)
        faults = quality.faults(rec.warnings)
        if not faults or attempt == soak.retries or lab.signalled(rec):
            break
        lost = rec.sent - rec.forwarded
        discarded.append(f"attempt {attempt + 1} discarded ({lost} lost): {'; '.join(faults)}")
    start_s = index * soak.segment_s
    seconds = series.per_second(
        sampler.samples, rec.sent, rec.received, rec.forwarded, rec.duration_s, start_s
    )
    own = series.Segment(segment=index, start_s=start_s, attempts=attempt + 1, per_second=seconds)
    if prev_end is not None and not discarded:
        own["gap_before_s"] = round(sampler.t0 - prev_end, 3)
    rec = replace(
        rec,
        counters={**rec.counters, "soak": own},
        warnings=[*rec.warnings, *discarded],
        run_id=ctx.run_id,
    )
    return rec, sampler.t_end


def loop(soak: Soak, ctx: TrialContext, store: Store) -> None:
    """Every segment not stored yet, back to back, each stored as it ends."""
    assert soak.experiment_id is not None
    done = {k for _, k in store.done_trials(soak.experiment_id)}
    ended: float | None = None
    for i, length in enumerate(soak.lengths):
        if i in done:
            ended = None
            continue
        rec, ended = measure_segment(soak, ctx, i, length, ended)
        store.add_trial(soak.experiment_id, rec)  # committed now: a crash loses only this one
        soak.stored += 1
        per_second: list[series.Second] = rec.counters["soak"]["per_second"]
        soak.seconds.extend(series.gapped(per_second) if rec.excluded else per_second)
        soak.progress(progress_line(soak, rec, i))


def progress_line(soak: Soak, rec: TrialRecord, i: int) -> str:
    lost = rec.sent - rec.forwarded
    flag = " excluded" if rec.excluded else (" !" if rec.warnings else "")
    n = len(series.events(soak.seconds, soak.goal))
    return (
        f"[{i + 1}/{len(soak.lengths)}] {rec.duration_s:.3g} s at {fmt_rate(rec.rate_pps)}: "
        f"lost {lost} (PLR {lost / max(rec.sent, 1):.2e}){flag} | events so far {n}"
    )
