"""The search on the embedded testbed: every trial stored as it ends, then (optionally)
a short PASTRAMI sweep around the PDR found, with its verdict.

Builds on the sweep's pieces: the testbed it adopts or builds (``open_testbed``), the
generator's peak through it (``probe_peak``, ``check_peak``), the trial engine
(``trials_on``, ``measure``), the store (an experiment of kind ``search``, a run with the
environment), and for ``--then-verify`` the sweep itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from netassay import names
from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.counters.sutstate import beside
from netassay.errors import GeneratorError, NetassayError, TestbedError, UsageError
from netassay.methods.base import RunOptions
from netassay.methods.search.request import BOTH, RETRIES, SearchRequest
from netassay.quality import generator_trouble
from netassay.shared import lab, sweep_run
from netassay.shared import search_engine as engine
from netassay.shared.search_spec import (
    MIN_LOAD_FRACTION,
    TIME_CAP_S,
    Goal,
    LatencyBound,
    SearchSpec,
    parse_max_latency,
    verify_goal,
)
from netassay.shared.stored_search import KIND
from netassay.shared.sweep_analyse import assess_experiment
from netassay.shared.sweep_plan import Plan
from netassay.store.db import Experiment, Store
from netassay.testbed import topology
from netassay.testbed.bed import Testbed, config_from_state, require_root
from netassay.traffic.generator import GenResult
from netassay.trial import bidirectional as trial_bidirectional
from netassay.trial.engine import TrialContext, measure, testbed_problem, trials_on
from netassay.trial.hooks import Hooks
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate

log = logging.getLogger("netassay.methods.search")


class SearchIncomplete(NetassayError):
    """The search stopped before every goal was reached (time cap); what it found is shown."""

    exit_code = 9


@dataclass(frozen=True)
class VerifyPlan:
    """The PASTRAMI sweep around the PDR found: ``loads`` loads from (1 - span) to
    (1 + span) times it, ``runs`` trials of ``duration_s`` each."""

    runs: int = 5
    duration_s: float = 1.0
    span: float = 0.2
    loads: int = 9

    def validate(self) -> None:
        if not 2 <= self.runs <= 100:
            raise UsageError(f"bad --verify-runs {self.runs}", "K in 2..100", "e.g. 5")
        if not 0 < self.span < 1:
            raise UsageError(f"bad --verify-span {self.span:g}", "it is in (0, 1)", "e.g. 0.2")
        if not 4 <= self.loads <= 50:
            raise UsageError(f"bad --verify-loads {self.loads}", "4..50 loads", "e.g. 9")

    def rates(self, center_pps: float, max_pps: float) -> list[float]:
        """The grid, rounded to whole pps, without loads above the search's max load."""
        step = 2 * self.span / (self.loads - 1)
        grid = [round(center_pps * (1 - self.span + j * step)) for j in range(self.loads)]
        return [r for r in grid if 0 < r <= max_pps]


@dataclass
class SearchJob:
    goals: tuple[Goal, ...]
    min_load_pps: float | None
    max_load_pps: float | None  # None: the generator's measured peak (with its margin)
    time_cap_s: float
    testbed: TestbedConfig
    db: str
    name: str = names.DEFAULT_NAME
    label: str = ""
    check_peak: bool = True
    retries: int = 2
    settle_s: float = 0.0
    verify: VerifyPlan | None = None
    progress: Callable[[str], None] | None = None
    note: Callable[[str], None] | None = None  # what is being done before trials run
    experiment_id: int | None = None
    stored: int = 0
    resumed: SearchSpec | None = None  # a resume: the stored search's own spec
    rates: dict[str, Any] | None = None  # loads written in bit/s or as shares (shared.rates)
    # both directions at once (trial.bidirectional): every load is both directions' sum
    bidirectional: bool = False
    hooks: Hooks | None = None  # commands run around each trial (trial.hooks)
    max_latency: LatencyBound | None = None  # --max-latency: a bound beside the loss
    latency: bool = False  # --latency: each trial keeps its latency histogram
    on: TrialContext | None = None  # another run's open testbed to search on (RunOptions.on)

    def spec(self, max_load_pps: float, reach_pps: float | None = None) -> SearchSpec:
        lo = self.min_load_pps or max_load_pps * MIN_LOAD_FRACTION
        spec = SearchSpec(self.goals, lo, max_load_pps, self.time_cap_s, reach_pps=reach_pps,
                          max_latency=self.max_latency, latency=self.latency)  # fmt: skip
        spec.validate()
        return spec


@dataclass(frozen=True)
class VerifyResult:
    experiment_id: int
    goal: Goal
    center_pps: float
    rates_pps: list[float]
    runs: int
    duration_s: float
    verdict: str
    reason: str
    pdr_pps: float | None  # the sweep's own PDR at the goal's loss ratio

    @property
    def verified(self) -> bool:
        return self.verdict == "GOOD"


@dataclass(frozen=True)
class SearchReport:
    experiment_id: int | None
    db: str
    outcome: engine.SearchOutcome
    generator_peak_pps: float | None
    setup_s: float  # testbed, peak probe, environment: before the first trial
    verify: VerifyResult | None = None
    verify_skipped: str | None = None  # --then-verify, but no sweep: why

    def check(self) -> None:
        """Raise the error that says why the search stopped early (after it was shown:
        exit 9 at the time cap, a generator or testbed error at a fault)."""
        stop = self.outcome.stop
        if stop is None:
            return
        where = f"{self.outcome.trials} trial(s) stored in {self.db}"
        if stop.kind in (engine.FAULT, engine.REACH):
            cls = GeneratorError if generator_trouble(stop.detail.split("; ")) else TestbedError
            raise cls(
                f"search stopped: {stop.message}",
                f"a fault is never counted as SUT loss; {where}",
                "give a lower --max-load, or check the testbed ('netassay testbed show')",
            )
        raise SearchIncomplete(
            f"search stopped: {stop.message}",
            f"the bounds shown are what it found; {where}",
            "give a longer --time-cap, or coarser goals (--width, --duration-sum)",
        )


def prepare(req: SearchRequest, options: RunOptions, cfg: Config) -> SearchJob:
    """Validate everything a search needs before anything is touched."""
    job = _prepare(req, options, cfg)
    job.hooks = lab.hooks_of(options)
    job.on = options.on
    return job


def _prepare(req: SearchRequest, options: RunOptions, cfg: Config) -> SearchJob:
    retries = RETRIES if options.retries is None else options.retries
    lab.check_request(options.name, retries, options.experiment, options.resume, "search")
    if options.resume:
        return _resume_job(req, options, retries)
    goals = req.make_goals()
    lo, hi = req.min_load_pps, req.max_load_pps
    cap = TIME_CAP_S if req.time_cap_s is None else req.time_cap_s
    name = options.name or names.DEFAULT_NAME
    testbed = lab.running_config(name, cfg.testbed, options)
    topology.validate(testbed)
    if req.bidirectional:
        sweep_run.refuse_bidirectional(testbed)
    if hi is None and not options.check_peak:
        raise UsageError(
            "--no-peak-check needs --max-load",
            "without the probe the max load is unknown",
            "give --max-load (e.g. 300k)",
        )
    # the range and the time cap, checked now (the peak is only a default for the max)
    SearchSpec(goals, lo or 1.0, hi or max(2.0, (lo or 1.0) * 2), cap).validate()
    job = SearchJob(
        goals, lo, hi, cap, testbed, lab.store_path(options.db), name, options.label,
        options.check_peak, retries, req.settle_s,
    )  # fmt: skip
    job.verify = _verify_plan(req, goals, required=True)
    job.rates, job.bidirectional = options.rates, req.bidirectional
    job.max_latency = parse_max_latency(req.max_latency) if req.max_latency else None
    job.latency = req.latency
    if (job.max_latency is not None or job.latency) and testbed.sink == "nft":
        flag_ = "--max-latency" if job.max_latency is not None else "--latency"
        raise UsageError(
            f"{flag_} needs the XDP sink", "--sink nft keeps no latency histogram",
            "use --sink xdp (the default) or xdp+nft",
        )  # fmt: skip
    return job


def _verify_plan(req: SearchRequest, goals: tuple[Goal, ...], required: bool) -> VerifyPlan | None:
    """The verify sweep a request asks for (None: none, or no PDR goal on a resume)."""
    if not req.then_verify:
        return None
    final = req.final_duration_s or 1.0
    vp = VerifyPlan(
        req.verify_runs, req.verify_duration_s or final, req.verify_span, req.verify_loads
    )
    vp.validate()
    if verify_goal(goals) is None:
        if not required:
            return None
        raise UsageError(
            "--then-verify needs a PDR goal",
            "the PASTRAMI verdict is on a PDR (a loss ratio > 0)",
            "add --goal pdr:0.005",
        )
    return vp


def run(job: SearchJob) -> SearchReport:
    """Run (or resume) the search, then the verify sweep; every trial is stored as soon
    as it ends."""
    topology.validate(job.testbed)
    require_root("a search")
    t_start = time.monotonic()
    note = job.note or (lambda line: None)
    if job.on is not None:  # on the testbed another run holds open, in its trial context
        peak, max_load = _max_load(job.on.tb, job, note)
        spec = job.spec(*_reach(job.on, max_load, job, note))
        with Store(job.db) as store:
            return _measured(job, spec, job.on, store, peak, t_start, note)
    with lab.open_testbed(job.name, job.testbed, "a search", note) as tb:
        peak, max_load = (None, 0.0) if job.resumed is not None else _max_load(tb, job, note)
        keep = (
            job.resumed.keeps_latency if job.resumed is not None
            else job.latency or job.max_latency is not None
        )  # fmt: skip
        with trials_on(tb, latency=keep, bidirectional=job.bidirectional) as ctx:
            if job.resumed is not None:
                spec = job.resumed
            else:  # the max load paced once as the trials send it (--bidirectional: both)
                spec = job.spec(*_reach(ctx, max_load, job, note))
            if job.bidirectional:
                note(BOTH)
            with Store(job.db) as store:  # a bad range was refused before any write
                return _measured(job, spec, ctx, store, peak, t_start, note)


def _measured(
    job: SearchJob, spec: SearchSpec, ctx: TrialContext, store: Store, peak: float | None,
    t_start: float, note: lab.Note,
) -> SearchReport:  # fmt: skip
    """The search's trials (a resume's stored ones replayed first), then its verify sweep."""
    stored: list[TrialRecord] = []
    if job.resumed is not None:
        assert job.experiment_id is not None
        stored = store.trial_records(job.experiment_id)
        note(
            f"resuming search experiment {job.experiment_id} ('{job.label}') in "
            f"{job.db}: its {len(stored)} stored trials are replayed, then it goes on"
        )
        ctx, _ = lab.restart_experiment(store, ctx, job.experiment_id, "search", note)
    else:
        ctx = _start(job, spec, ctx, store, peak)
    ctx = lab.with_hooks(ctx, job.hooks)
    setup_s = time.monotonic() - t_start
    try:
        spec, outcome = _search(job, spec, ctx, store, stored, note)
    except TestbedError as exc:  # taken apart under the search: what is stored stays
        if job.on is not None:  # another run's testbed: that run says what to do
            raise
        then = f"{exc.todo}, then " if exc.todo else ""
        raise TestbedError(
            exc.what, exc.why,
            f"{job.stored} trial(s) of this run are stored in {job.db}; {then}continue "
            f"with 'netassay search --db {job.db} --resume'",
        ) from exc  # fmt: skip
    report = SearchReport(job.experiment_id, job.db, outcome, peak, setup_s)
    if job.verify is not None and outcome.stop is None:
        v = _verify(job, spec, outcome, ctx, store, peak)
        if isinstance(v, str):
            report = replace(report, verify_skipped=v)
        else:
            report = replace(report, verify=v)
    return report


def _search(
    job: SearchJob, spec: SearchSpec, ctx: TrialContext, store: Store,
    stored: list[TrialRecord], note: lab.Note,
) -> tuple[SearchSpec, engine.SearchOutcome]:  # fmt: skip
    """The search, restarted below the generator's reach each time a generator limit
    that stayed one after its repeats shows the host cannot pace that load now (at most
    REACH_RESTARTS times)."""
    elapsed = 0.0
    for _ in range(REACH_RESTARTS + 1):
        outcome = engine.run_search(
            spec, _trial_fn(job, ctx), on_trial=_on_trial(job, store), stored=stored,
            retries=job.retries,
            retry_ok=lambda rec: not lab.signalled(rec) and testbed_problem(ctx) is None,
            elapsed_before_s=elapsed,
        )  # fmt: skip
        stop = outcome.stop
        if stop is None or stop.kind != engine.REACH or stop.reach_pps is None:
            break
        spec = _below_reach(job, spec, stop.reach_pps, note)
        assert job.experiment_id is not None
        exp = store.experiment(job.experiment_id)
        store.update_config(job.experiment_id, {**exp.config, "search": spec.to_json()})
        stored, elapsed = store.trial_records(job.experiment_id), outcome.wall_time_s
    return spec, outcome


REACH_RESTARTS = 3


def _below_reach(job: SearchJob, spec: SearchSpec, reach: float, note: lab.Note) -> SearchSpec:
    """The spec of a search restarted with its max load at the generator's reach."""
    new_max = lab.REACH_MARGIN * reach
    lo = job.min_load_pps or new_max * MIN_LOAD_FRACTION
    if lo >= new_max:
        raise GeneratorError(
            f"the generator reaches only {fmt_rate(reach)} on this host now",
            f"that is at or below the search's min load ({fmt_rate(lo)})",
            "give a lower --min-load, or free the host's CPUs (see 'netassay testbed show')",
        )
    note(
        f"the generator reached {fmt_rate(reach)} of the max load "
        f"{fmt_rate(spec.max_load_pps)} on this host now: the search starts again with "
        f"the max load at {fmt_rate(new_max)} (a bound there is generator-bound)"
    )
    return replace(spec, min_load_pps=lo, max_load_pps=new_max, epoch=spec.epoch + 1,
                   reach_pps=new_max)  # fmt: skip


def _max_load(tb: Testbed, job: SearchJob, note: lab.Note) -> tuple[float | None, float]:
    """(the generator's peak through this testbed, the max load): the max defaults to
    98% of the peak, a given max above that is refused (like a sweep's top load; with
    --bidirectional each direction's half, as the sweep checks its loads per direction).
    The max is then paced once (``_reach``)."""
    if job.max_load_pps is not None:
        if not job.check_peak:
            return None, job.max_load_pps
        per = job.max_load_pps / 2 if job.bidirectional else job.max_load_pps
        return lab.check_peak(tb, (per,), note), job.max_load_pps
    peak = lab.probe_peak(tb, note)
    if peak <= 0:
        raise GeneratorError(
            "the generator sent nothing through the testbed",
            "its peak probe achieved 0 pps",
            "check 'netassay testbed show' and the generator (--debug)",
        )
    return peak, lab.PEAK_MARGIN * peak


def _reach(
    ctx: TrialContext, max_load: float, job: SearchJob, note: lab.Note
) -> tuple[float, float | None]:
    """(the max load, the reach it was lowered to or None): on a busy host a paced load
    holds less than the peak at ``--rate max``; with --bidirectional both generators
    pace it at once, half each, as the trials send it. No probe with --no-peak-check."""
    if not job.check_peak:
        return max_load, None
    tb = ctx.tb

    def both(rate_pps: float, duration_s: float) -> GenResult:
        return trial_bidirectional.combined(
            *trial_bidirectional.send_both(tb, rate_pps / 2, duration_s)
        )

    reach = lab.paced_reach(tb, max_load, note, send=both if ctx.reverse is not None else None)
    if reach >= max_load:
        return max_load, None
    note(
        f"the max load is lowered to {fmt_rate(reach)}, what the generator paces on this "
        "host now (a bound there is generator-bound)"
    )
    return reach, reach


def _start(
    job: SearchJob, spec: SearchSpec, ctx: TrialContext, store: Store, peak: float | None
) -> TrialContext:
    cfg = job.testbed
    both = " bidirectional" if job.bidirectional else ""  # its loads are aggregate
    job.experiment_id, ctx = lab.start_experiment(
        store, ctx, kind=KIND, name=job.name,
        label=job.label or f"search {lab.default_label(cfg, job.name)}{both}",
        config={
            "search": spec.to_json(), "settle_s": job.settle_s, "retries": job.retries,
            "testbed": asdict(cfg), "testbed_name": job.name,
            **({"bidirectional": True} if job.bidirectional else {}),  # absent: one way
        },
        metadata={"method": KIND, **({"rates": job.rates} if job.rates else {})}, peak=peak,
    )  # fmt: skip
    return ctx


def unfinished(store: Store, experiment_id: int | None) -> tuple[Experiment, SearchSpec] | None:
    """The search to resume: ``experiment_id`` (a netassay search), else the newest
    netassay search whose stored trials end before MLRsearch reached every goal."""
    if experiment_id is not None:
        exps = [store.experiment(experiment_id)]
        if exps[0].id not in {e.id for e in store.experiments(kinds=(KIND,))} or (
            "search" not in exps[0].config
        ):
            raise UsageError(
                f"experiment {experiment_id} in {store.path} is not a netassay search",
                f"it is a '{exps[0].kind}' from '{exps[0].source}'",
                "give the id of a search (see 'netassay assess --json')",
            )
    else:
        exps = [e for e in store.experiments(kinds=(KIND,)) if "search" in e.config]
    for exp in reversed(exps):
        spec = SearchSpec.from_json(exp.config["search"])
        records = store.trial_records(exp.id)
        out = engine.run_search(spec, None, stored=records, live=False)
        if out.stop is not None and out.stop.kind == engine.STORED_END:
            return exp, spec
        if experiment_id is not None:
            raise UsageError(
                f"search {experiment_id} is complete",
                "MLRsearch reached every goal with its stored trials",
                "start a new search without --resume",
            )
    return None


def _resume_job(req: SearchRequest, options: RunOptions, retries: int) -> SearchJob:
    given = req.given_goal_flags() + sorted(options.testbed_flags)
    if options.db is None:
        raise UsageError("--resume needs --db", "it names the store to resume", "add --db")
    if given:
        raise UsageError(
            f"--resume takes no goal, range or testbed flags ({', '.join(given)})",
            "a resumed search continues with what it started with (replaying its trials)",
            "drop those flags",
        )
    lab.refuse_with_resume(["--label"] if options.label else [], "search")
    with Store(options.db, create=False) as store:
        found = unfinished(store, options.experiment)
    if found is None:
        raise UsageError(
            f"nothing to resume in {options.db}",
            "every search in it is complete (or it has none)",
            "start a new search without --resume",
        )
    exp, spec = found
    name = exp.config.get("testbed_name", names.DEFAULT_NAME)
    if options.name is not None and options.name != name:
        raise UsageError(
            f"--name {options.name} conflicts with the search to resume",
            f"experiment {exp.id} ran on testbed '{name}'",
            "drop --name (resume uses the search's own testbed)",
        )
    if req.time_cap_s is not None:
        spec = replace(spec, time_cap_s=req.time_cap_s)
        spec.validate()
    job = SearchJob(
        spec.goals, spec.min_load_pps, spec.max_load_pps, spec.time_cap_s,
        config_from_state({"config": exp.config["testbed"]}), options.db, name, exp.label,
        check_peak=False, retries=retries, settle_s=float(exp.config.get("settle_s", 0)),
    )  # fmt: skip
    job.experiment_id = exp.id
    job.resumed = spec
    job.bidirectional = bool(exp.config.get("bidirectional", False))
    if job.bidirectional:
        sweep_run.refuse_bidirectional(job.testbed)
    job.verify = _verify_plan(req, spec.goals, required=False)
    return job


def _trial_fn(job: SearchJob, ctx: TrialContext) -> engine.TrialFn:
    first = [True]

    # --bidirectional: half the load each way; the record's is both directions' sum
    per = 0.5 if ctx.reverse is not None else 1.0

    def trial(i: int, k: int, load: float, duration: float) -> TrialRecord:
        if job.settle_s and not first[0]:
            time.sleep(job.settle_s)
        first[0] = False
        return replace(measure(ctx, i, k, load * per, duration), run_id=ctx.run_id)

    return trial


def _on_trial(job: SearchJob, store: Store) -> Callable[[engine.TrialEvent], None]:
    names = {g.key: g.label for g in job.goals}

    def on_trial(ev: engine.TrialEvent) -> None:
        if ev.replayed:
            return
        assert job.experiment_id is not None
        store.add_trial(job.experiment_id, ev.record)  # committed now
        job.stored += 1
        if job.progress:
            job.progress(progress_line(ev, names))

    return on_trial


def progress_line(ev: engine.TrialEvent, names: dict[str, str]) -> str:
    rec = ev.record
    info = rec.counters["search"]
    lost = rec.sent - rec.forwarded
    head = (
        f"[{info['trial']}] {fmt_rate(info['intended_load_pps'])} "
        f"{info['intended_duration_s']:g} s: lost {lost} of {rec.sent} "
        f"(PLR {lost / max(rec.sent, 1):.2e})"
    )
    if rec.excluded:
        return f"{head}: measurement fault, not SUT loss: {rec.excluded}"
    bounds = "; ".join(
        f"{names.get(key, key)} [{_k(lo)}, {_k(hi)}]" for key, (lo, hi) in ev.bounds.items()
    )
    at_scale = beside(rec.counters, rec.loss_location)
    return f"{head} | {bounds} | {info['elapsed_s']:.0f} s{at_scale}"


def _k(pps: float | None) -> str:
    return "-" if pps is None else f"{pps / 1000:.2f}k"


# -- verify: a PASTRAMI sweep around the PDR found -----------------------------------
def _verify(
    job: SearchJob,
    spec: SearchSpec,
    outcome: engine.SearchOutcome,
    ctx: TrialContext,
    store: Store,
    peak: float | None,
) -> VerifyResult | str:
    """The verify sweep and its verdict, or why there is none."""
    goal = verify_goal(job.goals)
    assert goal is not None and job.verify is not None
    found = next(o for o in outcome.goals if o.goal == goal)
    center = found.conditional_pps or found.lower_pps
    why = None
    if center is None:
        why = f"the search found no {goal.label} lower bound"
    elif found.upper_pps is None:
        why = (
            f"the search found no {goal.label} upper bound (the SUT met it at the max load): "
            "a sweep around it could not see saturation"
        )
    if why is not None or center is None:
        return why or f"the search found no {goal.label} lower bound"
    vp = job.verify
    rates = vp.rates(center, spec.max_load_pps)
    if len(rates) < 4:
        return "fewer than 4 loads of the verify grid are at or below the max load"
    # a bidirectional sweep's loads are per direction (its trials store their sum)
    per = [r / 2 for r in rates] if job.bidirectional else rates
    plan = Plan(tuple(per), vp.runs, vp.duration_s, job.settle_s)
    both = ", bidirectional (aggregate loads)" if job.bidirectional else ""
    sw = sweep_run.Sweep(
        plan, job.testbed, job.db, job.name,
        label=f"verify of search {job.experiment_id}: {goal.label} {fmt_rate(center)}{both}",
        check_peak=False, retries=job.retries, progress=job.progress,
    )  # fmt: skip
    sw.bidirectional = job.bidirectional
    sweep_run.loop(sw, sweep_run.start(sw, ctx, store, peak), store)
    assert sw.experiment_id is not None
    a = _assess(store, sw.experiment_id, goal)
    return VerifyResult(
        sw.experiment_id, goal, center, rates, vp.runs, vp.duration_s, a.verdict,
        a.saturation.reason, a.pdr.rate_pps,
    )  # fmt: skip


def _assess(store: Store, experiment_id: int, goal: Goal) -> Assessment:
    cfg = replace(AnalysisConfig(), pdr=goal.loss_ratio)
    a = assess_experiment(store, store.experiment(experiment_id), cfg)
    if a is None:
        raise TestbedError(
            f"the verify sweep (experiment {experiment_id}) has no usable trial",
            "every trial was a measurement fault",
            "see 'netassay assess' and the trials' warnings",
        )
    return a
