"""MLRsearch around a trial function. Pure: no testbed, no store, no clock of its own.

The algorithm is the MLRsearch package's (the code FD.io CSIT runs); this module only
feeds it trials and reads its results:

- a trial function ``(load_index, repetition, load_pps, duration_s) -> TrialRecord``
  runs one trial (on the testbed, or a synthetic SUT in the tests);
- the SUT's loss ratio given to MLRsearch is ``(sent - forwarded) / sent``: what the
  SUT did with what the generator really sent (unsent frames are not SUT loss);
- a trial that is a measurement fault (``TrialRecord.excluded``: the generator could
  not pace it, a counter failed, ...) is never given to MLRsearch as loss: it is run
  again (``retries``), and when it is still a fault the search stops and says so, so
  that it can never converge on a generator limit;
- stored trials are replayed first (``stored``): MLRsearch is deterministic given its
  trial results, so a search killed mid-way resumes, and a stored search is re-read,
  by replaying its trials;
- the time cap is kept before each trial (a trial that would end past it is not
  started); the bounds found so far are still reported;
- a search that did not finish (time cap, fault, stored trials that end) reports its
  bounds *as measured*: a load whose trials lost more than the goal in more than the
  exceed ratio of their time is an upper bound, whatever MLRsearch had classified yet
  (it classifies a load only when its duration sum is full), and a load that met the
  goal below the lowest such load is the lower bound. Nothing is claimed of a load
  that was not measured.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from MLRsearch import AbstractMeasurer, GoalResult, MeasurementResult, MultipleLossRatioSearch

from netassay import quality
from netassay.shared.search_spec import Goal, SearchSpec
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate

TrialFn = Callable[[int, int, float, float], TrialRecord]

LOWER, UPPER, UNDECIDED, UNUSABLE = "lower bound", "upper bound", "undecided", "unusable"
# how a reported bound was found: classified by MLRsearch (its duration sum full), or
# from the trials measured at that load alone (a search that did not finish)
CLASSIFIED, MEASURED = "classified", "measured"
TIME_CAP, FAULT, STORED_END = "time cap", "measurement fault", "stored trials end"
REACH = "generator reach"  # a generator limit near the max load: restart it lower (run)
# a restart below the reach needs the new max load (98% of it) above the min load
REACH_FLOOR = 0.98


@dataclass(frozen=True)
class Stop:
    """Why a search ended before every goal was reached."""

    kind: str  # TIME_CAP | FAULT | STORED_END
    message: str
    detail: str = ""  # for a fault: the trial's exclusion (which fault it was)
    reach_pps: float | None = None  # REACH: the rate the generator achieved there


@dataclass(frozen=True)
class TrialEvent:
    """One trial as the search saw it, right after MLRsearch took it into account."""

    record: TrialRecord  # counters["search"]: its number, classification per goal, ...
    replayed: bool  # taken from the store (a resume), not measured now
    bounds: dict[str, tuple[float | None, float | None]]  # goal key -> relevant bounds


@dataclass(frozen=True)
class GoalOutcome:
    goal: Goal
    lower_pps: float | None  # relevant lower bound (None: loss already at the min load)
    upper_pps: float | None  # relevant upper bound (None: the max load met the goal)
    conditional_pps: float | None  # conditional throughput at the relevant lower bound
    lower: dict[str, Any] | None = None  # trials and good/bad seconds at the lower bound
    upper: dict[str, Any] | None = None
    lower_as: str | None = None  # CLASSIFIED | MEASURED (None: no lower bound)
    upper_as: str | None = None

    @property
    def reached(self) -> bool:
        """Both bounds within the goal width, or the search hit a limit of the range."""
        if MEASURED in (self.lower_as, self.upper_as):
            return False
        if self.lower_pps is None or self.upper_pps is None:
            return True
        return (self.upper_pps - self.lower_pps) / self.upper_pps <= self.goal.relative_width


@dataclass(frozen=True)
class SearchOutcome:
    spec: SearchSpec
    goals: tuple[GoalOutcome, ...]
    trials: int  # trials stored (a trial whose faulty attempts were repeated counts once)
    attempts: int  # trials run, repeated faulty attempts included
    trial_time_s: float  # traffic time of every attempt
    wall_time_s: float  # from the search's start to the end of its last trial (all runs)
    stop: Stop | None = None  # None: MLRsearch reached every goal
    replayed: int = 0  # of the trials, taken from the store

    @property
    def complete(self) -> bool:
        return self.stop is None

    @property
    def overhead_per_trial_s(self) -> float | None:
        if not self.attempts:
            return None
        return max(0.0, self.wall_time_s - self.trial_time_s) / self.attempts


class _Halt(Exception):
    def __init__(self, stop: Stop) -> None:
        super().__init__(stop.message)
        self.stop = stop


class _Search(MultipleLossRatioSearch):
    """MLRsearch, with a look at its database after it took each trial into account."""

    after: Callable[[Any], None]

    def measure(self, duration: float, load: Any) -> Any:
        result = super().measure(duration, load)
        self.after(load)
        return result


def _class(estimates: tuple[bool, bool]) -> str:
    optimistic, pessimistic = estimates
    if optimistic != pessimistic:
        return UNDECIDED
    return LOWER if optimistic else UPPER


def _result(
    rec: TrialRecord, duration_s: float, load_pps: float, spec: SearchSpec | None = None
) -> MeasurementResult:
    """The SUT's loss on what was sent: offered = sent, forwarded = what the SUT
    delivered (the sink's own drops included). Durations are the intended ones, so that
    a trial of 0.9995 s does not leave a duration sum short. A trial that missed the
    spec's latency bound is given to MLRsearch as one that forwarded nothing: it fails
    every goal (MLRsearch counts a missing trial the same way), whatever its loss."""
    missed = latency_missed(rec, spec)
    return MeasurementResult(
        intended_duration=duration_s,
        intended_load=load_pps,
        offered_count=int(rec.sent),
        forwarding_count=0 if missed else int(rec.forwarded),
    )


def intended_load(trial: Mapping[str, Any]) -> float:
    """The load (pps) the search meant a stored trial (a ``Store.trials`` row) to offer:
    the one it asked for, which the trial's own rate may differ from by its rounding."""
    return float(trial["counters"].get("search", {}).get("intended_load_pps", trial["rate_pps"]))


def loss_ratio(rec: TrialRecord) -> float:
    return (rec.sent - rec.forwarded) / rec.sent if rec.sent else 0.0


def latency_of(rec: TrialRecord, spec: SearchSpec | None) -> dict[str, Any] | None:
    """The trial against the spec's latency bound (None without one): the percentile's
    value (None: no frame arrived to have one), the bound, and whether it held."""
    bound = spec.max_latency if spec is not None else None
    if bound is None:
        return None
    value = bound.of(rec.counters.get("latency"))
    held = value is not None and value <= bound.bound_ns
    return {"percentile": bound.percentile, "bound_ns": bound.bound_ns, "value_ns": value,
            "held": held}  # fmt: skip


def latency_missed(rec: TrialRecord, spec: SearchSpec | None) -> bool:
    lat = latency_of(rec, spec)
    return lat is not None and not lat["held"]


def judged_loss_ratio(rec: TrialRecord, spec: SearchSpec | None) -> float:
    """The loss ratio a goal is judged on: 1 for a trial that missed the latency bound."""
    return 1.0 if latency_missed(rec, spec) else loss_ratio(rec)


@dataclass
class _Measurer(AbstractMeasurer):
    spec: SearchSpec
    trial_fn: TrialFn | None
    on_trial: Callable[[TrialEvent], None]
    stored: deque[TrialRecord]
    live: bool
    retries: int
    retry_ok: Callable[[TrialRecord], bool]
    clock: Callable[[], float]
    mlr: _Search | None = None
    t0: float = 0.0
    index: dict[float, int] = field(default_factory=dict)  # load -> load index
    next_rep: dict[int, int] = field(default_factory=dict)  # load index -> next repetition
    at_load: dict[float, int] = field(default_factory=dict)  # usable trials per load
    n: int = 0  # trials stored or replayed
    attempts: int = 0
    trial_time_s: float = 0.0
    replayed: int = 0
    stored_wall_s: dict[Any, float] = field(default_factory=dict)  # run id -> its wall time
    pending: tuple[TrialRecord, bool] | None = None
    index_base: int = 0  # the first load index of this epoch (after a restart's)
    live_attempts: int = 0  # trials run by this call (not replayed)
    live_wall_s: float = 0.0  # this call's wall time, at the end of its last trial
    # usable trials given to MLRsearch, per intended load: (duration, SUT loss ratio)
    measured: dict[float, list[tuple[float, float]]] = field(default_factory=dict)

    # -- what MLRsearch calls ------------------------------------------------------
    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        while self.stored:
            rec = self.stored.popleft()
            info = rec.counters.get("search", {})
            self._book(rec, info)
            if rec.excluded:  # an earlier run stopped at this fault: measure it again
                continue
            if not _same(info, intended_load, intended_duration):
                raise _Halt(
                    Stop(
                        STORED_END,
                        f"stored trial {info.get('trial')} does not follow this search "
                        f"(asked for {fmt_rate(intended_load)} for {intended_duration:g} s)",
                    )
                )
            self.replayed += 1
            self._took(rec, intended_load, intended_duration)
            self.pending = (rec, True)
            return _result(rec, intended_duration, intended_load, self.spec)
        if not self.live or self.trial_fn is None:
            raise _Halt(Stop(STORED_END, f"the stored trials end after trial {self.n}"))
        if self._time_left() < intended_duration:
            raise _Halt(self._cap_stop(intended_load, intended_duration))
        rec = self._run(intended_load, intended_duration)
        self._took(rec, intended_load, intended_duration)
        self.pending = (rec, False)
        return _result(rec, intended_duration, intended_load, self.spec)

    def _took(self, rec: TrialRecord, load: float, duration: float) -> None:
        """A usable trial MLRsearch is given: counted at its load, kept as measured."""
        self.at_load[load] = self.at_load.get(load, 0) + 1
        self.measured.setdefault(load, []).append((duration, judged_loss_ratio(rec, self.spec)))

    # -- live trials -----------------------------------------------------------------
    def _time_left(self) -> float:
        return self.spec.time_cap_s - (self.clock() - self.t0)

    def _cap_stop(self, load: float, duration: float, why: str = "") -> Stop:
        elapsed = self.clock() - self.t0
        return Stop(
            TIME_CAP,
            f"the time cap ({self.spec.time_cap_s:g} s) is reached after {elapsed:.0f} s; "
            f"the next trial ({duration:g} s at {fmt_rate(load)}{why}) would end past it",
        )

    def _run(self, load: float, duration: float) -> TrialRecord:
        assert self.trial_fn is not None
        if load not in self.index:
            self.index[load] = max(self.index.values(), default=self.index_base - 1) + 1
        i = self.index[load]
        k = self.next_rep.get(i, 0)
        self.next_rep[i] = k + 1
        discarded: list[str] = []
        time0 = self.trial_time_s
        for attempt in range(self.retries + 1):
            rec = _stall_outweighed(self.trial_fn(i, k, load, duration), self.spec)
            self.attempts += 1
            self.live_attempts += 1
            self.trial_time_s += float(rec.duration_s)
            if not rec.excluded or attempt == self.retries or not self.retry_ok(rec):
                break
            if self._time_left() < duration:  # no time to repeat it: stop at the cap
                break
            lost = rec.sent - rec.forwarded
            discarded.append(f"attempt {attempt + 1} discarded ({lost} lost): {rec.excluded}")
        rec = replace(rec, warnings=[*rec.warnings, *discarded])
        self.n += 1
        meta: dict[str, Any] = {
            "trial": self.n,
            "intended_load_pps": load,
            "intended_duration_s": duration,
            "loss_ratio": loss_ratio(rec),
            **({"latency": lat} if (lat := latency_of(rec, self.spec)) else {}),
            "attempts": len(discarded) + 1,
            "attempt_time_s": round(self.trial_time_s - time0, 6),
            "elapsed_s": round(self.clock() - self.t0, 3),
        }
        if self.spec.epoch:
            meta["epoch"] = self.spec.epoch
        rec = replace(rec, counters={**rec.counters, "search": meta})
        # what is stored is what a replay adds up: the same totals, live or re-read
        self.trial_time_s = time0 + meta["attempt_time_s"]
        self.live_wall_s = meta["elapsed_s"]
        if rec.excluded:
            self._reached(rec, load)
            self._fault(rec, load, duration, len(discarded) + 1)
        return rec

    def _reached(self, rec: TrialRecord, load: float) -> None:
        """A generator limit that stays one after its repeats is the generator's reach on
        this host now (near the max load: the peak at ``--rate max`` is more than a paced
        trial keeps; below it: the host got busier), not a fault to stop at: stored,
        then the search is restarted below it (``run``), unless that leaves no range."""
        found = quality.faults(rec.warnings)
        achieved = float(rec.achieved_rate_pps or 0.0)
        if not quality.generator_bound(found) or achieved <= self.spec.min_load_pps / REACH_FLOOR:
            return
        rec.counters["search"]["goals"] = {
            g.key: {"trial": UNUSABLE, "load": UNDECIDED} for g in self.spec.goals
        }
        self.on_trial(TrialEvent(rec, False, self._bounds()))
        raise _Halt(
            Stop(
                REACH,
                f"the generator reached {fmt_rate(achieved)} of the {fmt_rate(load)} asked",
                "; ".join(found),
                achieved,
            )
        )

    def _fault(self, rec: TrialRecord, load: float, duration: float, attempts: int) -> None:
        """Store the faulty trial (named, excluded), then stop: its loss is not the SUT's."""
        assert self.mlr is not None
        goals = {g.key: {"trial": UNUSABLE, "load": UNDECIDED} for g in self.spec.goals}
        rec.counters["search"]["goals"] = goals
        self.on_trial(TrialEvent(rec, False, self._bounds()))
        if attempts <= self.retries and self.retry_ok(rec):  # retries cut short by the cap
            raise _Halt(self._cap_stop(load, duration, ", a repeat of a measurement fault"))
        raise _Halt(
            Stop(
                FAULT,
                f"the trial at {fmt_rate(load)} for {duration:g} s is a measurement fault "
                f"after {attempts} attempt(s): {rec.excluded}",
                rec.excluded or "",
            )
        )

    # -- after MLRsearch took the trial in ---------------------------------------------
    def after(self, load: Any) -> None:
        assert self.mlr is not None and self.pending is not None
        rec, replayed = self.pending
        self.pending = None
        if not replayed:
            stats = self.mlr.database[load]
            lr = loss_ratio(rec)
            held = not latency_missed(rec, self.spec)
            rec.counters["search"]["goals"] = {
                g.key: {
                    "trial": "good" if lr <= g.loss_ratio and held else "bad",
                    "load": _class(stats.estimates(self._target(g))),
                    **(
                        {
                            "loss": "held" if lr <= g.loss_ratio else "missed",
                            "latency": "held" if held else "missed",
                        }
                        if self.spec.max_latency
                        else {}
                    ),
                }
                for g in self.spec.goals
            }
        self.on_trial(TrialEvent(rec, replayed, self._bounds()))

    def _target(self, g: Goal) -> Any:
        assert self.mlr is not None
        return self.mlr.scaling.goal_to_final_target[g.to_mlr()]

    def _bounds(self) -> dict[str, tuple[float | None, float | None]]:
        if self.mlr is None or not hasattr(self.mlr, "database"):
            return {g.key: (None, None) for g in self.spec.goals}
        out = {}
        for g in self.spec.goals:
            b = self.mlr.database.get_relevant_bounds(self._target(g))
            out[g.key] = (float(b.clo) if b.clo else None, float(b.chi) if b.chi else None)
        return out

    def _book(self, rec: TrialRecord, info: dict[str, Any], earlier: bool = False) -> None:
        """Account a stored trial: its load index, repetition, time and number (and its
        run's wall time and load, unless it is an earlier epoch's: the next counts
        its time, its loads are numbered anew)."""
        load = float(info.get("intended_load_pps", rec.rate_pps))
        if not earlier:
            self.index.setdefault(load, rec.load_index)
        self.next_rep[rec.load_index] = max(
            self.next_rep.get(rec.load_index, 0), rec.repetition + 1
        )
        self.n = max(self.n, int(info.get("trial", self.n + 1)))
        self.attempts += int(info.get("attempts", 1))
        self.trial_time_s += float(info.get("attempt_time_s", rec.duration_s))
        run = rec.run_id
        if earlier:
            return
        self.stored_wall_s[run] = max(
            self.stored_wall_s.get(run, 0.0), float(info.get("elapsed_s", 0.0))
        )


def _stall_outweighed(rec: TrialRecord, spec: SearchSpec) -> TrialRecord:
    """A stalled trial whose loss, less its whole catch-up burst, still exceeds every
    goal's loss ratio fails every goal whatever the burst did: it is used, the stall a
    note (the trial engine already uses a stalled trial that lost nothing)."""
    if not rec.excluded or not quality.only_stalled(rec.warnings) or not rec.sent:
        return rec
    lateness = (rec.counters.get("generator") or {}).get("lateness_max_ns")
    if not lateness:  # a stall of unknown length: its burst is unbounded
        return rec
    burst = quality.stall_burst(lateness, rec.rate_pps)
    if (rec.sent - rec.forwarded - burst) / rec.sent <= max(g.loss_ratio for g in spec.goals):
        return rec
    why = "its loss less the whole burst still exceeds every goal"
    return replace(rec, warnings=quality.disarm_stall(rec.warnings, why))


def _epoch(rec: TrialRecord) -> int:
    return int(rec.counters.get("search", {}).get("epoch", 0))


def _same(info: dict[str, Any], load: float, duration: float) -> bool:
    want_load = float(info.get("intended_load_pps", math.nan))
    want_dur = float(info.get("intended_duration_s", math.nan))
    return math.isclose(want_load, load, rel_tol=1e-12) and math.isclose(
        want_dur, duration, rel_tol=1e-12
    )


def run_search(
    spec: SearchSpec,
    trial_fn: TrialFn | None,
    *,
    on_trial: Callable[[TrialEvent], None] | None = None,
    stored: Iterable[TrialRecord] = (),
    live: bool = True,
    retries: int = 2,
    retry_ok: Callable[[TrialRecord], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
    elapsed_before_s: float = 0.0,
) -> SearchOutcome:
    """Run MLRsearch for ``spec``: replay ``stored`` trials (ordered by their search
    trial number), then, when ``live``, measure with ``trial_fn`` until every goal is
    reached, the time cap comes, or a trial stays a measurement fault. The stored
    trials of an earlier epoch (before a restart at the generator's reach) are counted,
    not replayed; ``elapsed_before_s`` is the time they took in this run (its cap)."""
    spec.validate()
    ordered = sorted(stored, key=lambda r: int(r.counters.get("search", {}).get("trial", 0)))
    current = [r for r in ordered if _epoch(r) == spec.epoch]
    m = _Measurer(
        spec, trial_fn, on_trial or (lambda _e: None), deque(current), live, retries,
        retry_ok or (lambda _r: True), clock,
    )  # fmt: skip
    for rec in ordered:  # an earlier epoch's trials: counted, numbered past, not replayed
        if _epoch(rec) < spec.epoch:
            m.index_base = max(m.index_base, rec.load_index + 1)
            m._book(rec, rec.counters.get("search", {}), earlier=True)
    mlr = _Search(spec.mlr_config())
    mlr.after = m.after
    m.mlr = mlr
    m.t0 = clock() - elapsed_before_s
    stop = None
    try:
        mlr.search(m, debug=lambda _msg: None)
    except _Halt as halt:
        stop = halt.stop
    except RuntimeError as exc:
        if "takes too long" not in str(exc):
            raise
        stop = Stop(TIME_CAP, f"MLRsearch gave up: {exc}")
    live_wall = m.live_wall_s  # a replay spends none
    return SearchOutcome(
        spec=spec,
        goals=tuple(
            _goal_outcome(m, g) if stop is None else _unfinished_outcome(m, g) for g in spec.goals
        ),
        trials=m.n,
        attempts=m.attempts,
        trial_time_s=m.trial_time_s,
        wall_time_s=sum(m.stored_wall_s.values()) + live_wall,
        stop=stop,
        replayed=m.replayed,
    )


def _goal_outcome(m: _Measurer, g: Goal) -> GoalOutcome:
    mlr = m.mlr
    if mlr is None or not hasattr(mlr, "database"):
        return GoalOutcome(g, None, None, None)
    res = GoalResult.from_bounds(mlr.database.get_relevant_bounds(m._target(g)))
    lo, hi = res.relevant_lower_bound, res.relevant_upper_bound
    cond = res.conditional_throughput
    return GoalOutcome(
        g,
        float(lo) if lo else None,
        float(hi) if hi else None,
        float(cond) if cond else None,
        _bound_detail(m, lo),
        _bound_detail(m, hi),
        CLASSIFIED if lo else None,
        CLASSIFIED if hi else None,
    )


def measured_class(trials: list[tuple[float, float]], g: Goal) -> str:
    """A load's class from its measured trials alone ((duration, loss ratio) each):
    UPPER when the trials above the goal's loss ratio hold more than the exceed ratio
    of their time, else LOWER (MLRsearch's rule with the duration sum taken as what
    was measured)."""
    total = sum(d for d, _ in trials)
    bad = sum(d for d, lr in trials if lr > g.loss_ratio)
    return UPPER if bad > g.exceed_ratio * total else LOWER


def _unfinished_outcome(m: _Measurer, g: Goal) -> GoalOutcome:
    """The bounds of a search that did not finish, each as measured: the lowest load
    classified (or measured) as an upper bound, and the highest load below it that
    was classified (or measured) as meeting the goal. A bound MLRsearch classified is
    kept as such, with its conditional throughput."""
    done = _goal_outcome(m, g)
    uppers = [(ld, MEASURED) for ld, ts in m.measured.items() if measured_class(ts, g) == UPPER]
    if done.upper_pps is not None:
        uppers.append((done.upper_pps, CLASSIFIED))
    hi, hi_as = min(uppers, default=(None, None), key=lambda u: (u[0], u[1] != CLASSIFIED))
    lowers = [(ld, MEASURED) for ld, ts in m.measured.items() if measured_class(ts, g) == LOWER]
    if done.lower_pps is not None:
        lowers.append((done.lower_pps, CLASSIFIED))
    lowers = [lw for lw in lowers if hi is None or lw[0] < hi]
    lo, lo_as = max(lowers, default=(None, None), key=lambda u: (u[0], u[1] == CLASSIFIED))
    kept_lo = lo_as == CLASSIFIED and lo == done.lower_pps
    return GoalOutcome(
        g,
        lo,
        hi,
        done.conditional_pps if kept_lo else None,
        done.lower if kept_lo else _measured_detail(m, lo, g),
        done.upper if hi_as == CLASSIFIED else _measured_detail(m, hi, g),
        lo_as,
        hi_as,
    )


def _measured_detail(m: _Measurer, load: float | None, g: Goal) -> dict[str, Any] | None:
    """Trials and good/bad seconds at a load, from its measured trials."""
    if load is None:
        return None
    trials = m.measured.get(load, [])
    bad = sum(d for d, lr in trials if lr > g.loss_ratio)
    return {
        "load_pps": load,
        "trials": len(trials),
        "good_s": sum(d for d, _ in trials) - bad,
        "bad_s": bad,
        "worst_loss_ratio": max((lr for _, lr in trials), default=None),
    }


def _bound_detail(m: _Measurer, stat: Any) -> dict[str, Any] | None:
    """What classified a bound: its trials and seconds of good and bad trials."""
    if not stat:
        return None
    s = next(iter(stat.target_to_stat.values()))
    return {
        "load_pps": float(stat),
        "trials": m.at_load.get(float(stat), 0),
        "good_s": s.good_long + s.good_short,
        "bad_s": s.bad_long + s.bad_short,
        "pessimistic_loss_ratio": s.pessimistic_loss_ratio,
    }


# -- what a search may cost: simulated on synthetic SUTs (for --dry-run) ----------------
def _synthetic(capacity_pps: float, flaky: bool, clock: list[float]) -> TrialFn:
    """A SUT that forwards at most ``capacity_pps``; ``flaky``: within 1% of the
    capacity, every other trial loses 1% (the mixed results that need a full duration
    sum). ``clock`` advances by each trial and its overhead."""

    def trial(i: int, k: int, load: float, duration: float) -> TrialRecord:
        clock[0] += duration + TRIAL_OVERHEAD_S
        sent = max(1, round(load * duration))
        fwd = min(sent, round(capacity_pps * duration))
        if flaky and abs(load / capacity_pps - 1) < 0.01 and k % 2:
            fwd = min(fwd, int(sent * 0.99))
        return TrialRecord(i, k, load, duration, sent, fwd, "synthetic")

    return trial


@dataclass(frozen=True)
class Estimate:
    trials: int
    trial_time_s: float
    wall_time_s: float  # with TRIAL_OVERHEAD_S per trial
    capped: bool  # some simulated search hit the time cap


def estimate(spec: SearchSpec, points: int = 7) -> Estimate:
    """The costliest of searches simulated on SUTs whose capacity lies anywhere in the
    range (log-spaced), ideal and flaky, and one above the max load."""
    lo, hi = spec.min_load_pps, spec.max_load_pps
    caps = [lo * (hi / lo) ** ((j + 0.5) / points) for j in range(points)] + [hi * 2]
    worst = Estimate(0, 0.0, 0.0, False)
    capped = False
    for cap in caps:
        for flaky in (False, True):
            clock = [0.0]

            def now(c: list[float] = clock) -> float:
                return c[0]

            out = run_search(spec, _synthetic(cap, flaky, clock), clock=now, retries=0)
            capped |= out.stop is not None and out.stop.kind == TIME_CAP
            if out.trial_time_s > worst.trial_time_s:
                worst = Estimate(out.trials, out.trial_time_s, clock[0], False)
    return replace(worst, capped=capped)
