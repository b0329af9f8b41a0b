"""A search's result as text and JSON, and stored searches re-read for ``assess``.

A stored search is re-read by replaying its trials into MLRsearch (it is deterministic
given its trial results), so what ``assess`` prints is what the search computed.
A search has no PASTRAMI verdict of its own: its loads are where MLRsearch chose to
measure, not a grid; ``--then-verify`` stores a sweep that has one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from netassay.analysis.caps import CapExcess, above_cap
from netassay.methods.search import bounds_held, latency_at
from netassay.methods.search import request as search_request
from netassay.methods.search.run import SearchJob, SearchReport, VerifyPlan, VerifyResult
from netassay.shared import dataplane_counters as dataplane
from netassay.shared import lab
from netassay.shared import search_engine as engine
from netassay.shared.directions import (
    DIRECTIONS,
    SIDE_HEADER,
    DirectionAtLoad,
    direction_rows,
    side_columns,
)
from netassay.shared.imix_sizes import json_lines, stored_mix
from netassay.shared.rates import rates_json, rates_lines
from netassay.shared.search_spec import MLRSEARCH_VERSION, SearchSpec
from netassay.shared.stored_search import KIND
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S
from netassay.store.db import Experiment, Store
from netassay.units import fmt_rate


class GoalJson(TypedDict):
    """A goal's outcome as --json writes it (``goal_json``): the goal, its bounds and how
    they were found, the search's totals; ``generator_bound`` only where it is."""

    goal: str
    label: str
    loss_ratio: float
    exceed_ratio: float
    relative_width: float
    initial_trial_duration_s: float
    final_trial_duration_s: float
    duration_sum_s: float
    relevant_lower_bound_pps: float | None
    relevant_upper_bound_pps: float | None
    lower_bound_as: str | None
    upper_bound_as: str | None
    conditional_throughput_pps: float | None
    reached: bool
    trials: int
    trial_time_s: float
    wall_time_s: float
    lower_bound: dict[str, Any] | None  # engine.GoalOutcome.lower: MLRsearch's own
    upper_bound: dict[str, Any] | None
    generator_bound: NotRequired[bool]


class StopJson(TypedDict):
    kind: str
    why: str


class _OutcomeHead(TypedDict):
    complete: bool
    stop: StopJson | None
    trials: int
    attempts: int
    trial_time_s: float
    wall_time_s: float
    overhead_per_trial_s: float | None
    min_load_pps: float
    max_load_pps: float
    time_cap_s: float
    mlrsearch: str


class _OutcomeGoals(_OutcomeHead):
    goals: list[GoalJson]


class _OutcomeReach(_OutcomeHead):
    generator_reach_pps: float
    goals: list[GoalJson]


# A search's outcome as --json writes it (``outcome_json``), in this order: its totals,
# its load range, the generator's reach where the max load was lowered to it, each
# goal's ``GoalJson``.
OutcomeJson = _OutcomeGoals | _OutcomeReach


class VerifyJson(TypedDict):
    """The verify sweep as --json writes it (``verify_json``)."""

    experiment_id: int
    goal: str
    center_pps: float
    rates_pps: list[float]
    runs: int
    duration_s: float
    verdict: str
    reason: str
    pdr_pps: float | None
    verified: bool


def goal_json(o: engine.GoalOutcome, out: engine.SearchOutcome) -> GoalJson:
    g = o.goal
    doc: GoalJson = {
        "goal": g.key,
        "label": g.label,
        "loss_ratio": g.loss_ratio,
        "exceed_ratio": g.exceed_ratio,
        "relative_width": g.relative_width,
        "initial_trial_duration_s": g.initial_trial_duration_s,
        "final_trial_duration_s": g.final_trial_duration_s,
        "duration_sum_s": g.duration_sum_s,
        "relevant_lower_bound_pps": o.lower_pps,
        "relevant_upper_bound_pps": o.upper_pps,
        # "classified" (MLRsearch, duration sum full) or "measured" (an unfinished search)
        "lower_bound_as": o.lower_as,
        "upper_bound_as": o.upper_as,
        "conditional_throughput_pps": o.conditional_pps,
        "reached": o.reached and out.complete,
        # every trial counts toward every goal (MLRsearch): the search's totals
        "trials": out.trials,
        "trial_time_s": round(out.trial_time_s, 3),
        "wall_time_s": round(out.wall_time_s, 3),
        "lower_bound": o.lower,
        "upper_bound": o.upper,
    }
    if _generator_bound(o, out):
        doc["generator_bound"] = True
    return doc


def _generator_bound(o: engine.GoalOutcome, out: engine.SearchOutcome) -> bool:
    """The goal was met at a max load lowered to the generator's reach: the SUT's bound
    is at least that, the generator could not show more on this host."""
    return out.spec.reach_pps is not None and o.upper_pps is None and o.lower_pps is not None


def outcome_json(out: engine.SearchOutcome) -> OutcomeJson:
    per = out.overhead_per_trial_s
    head: _OutcomeHead = {
        "complete": out.complete,
        "stop": None if out.stop is None else {"kind": out.stop.kind, "why": out.stop.message},
        "trials": out.trials,
        "attempts": out.attempts,
        "trial_time_s": round(out.trial_time_s, 3),
        "wall_time_s": round(out.wall_time_s, 3),
        "overhead_per_trial_s": None if per is None else round(per, 3),
        "min_load_pps": out.spec.min_load_pps,
        "max_load_pps": out.spec.max_load_pps,
        "time_cap_s": out.spec.time_cap_s,
        "mlrsearch": MLRSEARCH_VERSION,
    }
    goals = [goal_json(o, out) for o in out.goals]
    if out.spec.reach_pps:
        return {**head, "generator_reach_pps": out.spec.reach_pps, "goals": goals}
    return {**head, "goals": goals}


def verify_json(v: VerifyResult | None) -> VerifyJson | None:
    if v is None:
        return None
    return {
        "experiment_id": v.experiment_id,
        "goal": v.goal.key,
        "center_pps": v.center_pps,
        "rates_pps": v.rates_pps,
        "runs": v.runs,
        "duration_s": v.duration_s,
        "verdict": v.verdict,
        "reason": v.reason,
        "pdr_pps": v.pdr_pps,
        "verified": v.verified,
    }


@dataclass(frozen=True)
class BothAtBound:
    """A --bidirectional search's directions at one goal's lower bound (``at_bounds``):
    the aggregate load and each direction's, the trials at it, each direction's sums."""

    goal: str
    label: str
    rate_pps_aggregate: float
    rate_pps_per_direction: float
    trials: int
    sides: dict[str, DirectionAtLoad]

    def to_json(self) -> dict[str, Any]:
        return {
            "goal": self.goal, "label": self.label, "rate_pps_aggregate": self.rate_pps_aggregate,
            "rate_pps_per_direction": self.rate_pps_per_direction, "trials": self.trials,
            **{d: self.sides[d].to_json() for d in DIRECTIONS},
        }  # fmt: skip


CONVENTION = "aggregate of both directions (FD.io CSIT)"


@dataclass(frozen=True)
class StoredExtras:
    """What a search stored beside its bounds (``stored_extras``), as its text shows it
    (``extras_lines``) and its --json writes it (``to_json``: each one under its key,
    only where there is one). The frame mix, the data plane's counters and the loads as
    written are their own modules' JSON documents, kept as they give them."""

    latency_at_bounds: tuple[latency_at.LatencyAt, ...] = ()
    latency_bound: bounds_held.ByLoad | None = None
    imix: dict[str, Any] | None = None  # imix_sizes.stored_mix
    dataplane: dict[str, Any] | None = None  # dataplane_counters.stored
    rates: dict[str, Any] | None = None  # rates.rates_json of the stored loads
    bidirectional: tuple[BothAtBound, ...] | None = None  # None: not --bidirectional
    above_cap: tuple[CapExcess, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.latency_at_bounds:
            out["latency_at_bounds"] = [x.to_json() for x in self.latency_at_bounds]
        if self.latency_bound is not None:
            out["latency_bound"] = self.latency_bound
        if self.imix:
            out["imix"] = self.imix
        if self.dataplane:
            out["dataplane"] = self.dataplane
        if self.rates is not None:
            out["rates"] = self.rates
        if self.bidirectional is not None:
            out["bidirectional"] = {
                "convention": CONVENTION,
                "at_lower_bounds": [x.to_json() for x in self.bidirectional],
            }
        if self.above_cap:
            out["above_cap"] = [x.to_json() for x in self.above_cap]
        return out


def stored_extras(db: Any, experiment_id: int | None, out: engine.SearchOutcome) -> StoredExtras:
    """What a search stored beside its bounds: with --latency (or --max-latency) the
    one-way latency at each goal's lower bound (``latency_at_bounds``), its frame mix
    with sent and received per size at each load it tried (``imix``), its loads as
    written in bit/s or as shares (``rates``), with --bidirectional each direction's
    counts at each goal's lower bound (``bidirectional``), a data plane's own counters
    beside the loss location at each load it tried (``dataplane``) and each lower
    bound above a cap netassay set (``above_cap``); none of them when it has none (or
    no store holds it)."""
    if experiment_id is None or not Path(db).is_file():
        return StoredExtras()
    with Store(db, readonly=True) as st:
        mix = stored_mix(st, experiment_id)
        exp = st.experiment(experiment_id)
        rates = exp.metadata.get("rates")
        both = at_bounds(st, experiment_id, out) if exp.config.get("bidirectional") else None
        own = dataplane.stored(st, experiment_id)
        bound = bounds_held.by_load(st, experiment_id, out.spec) if out.spec.max_latency else None
        capped = over_caps(st, exp, out)
        lat = latency_at.at_bounds(st.trials(experiment_id), out) if out.spec.keeps_latency else []
    return StoredExtras(
        latency_at_bounds=tuple(lat), latency_bound=bound, imix=mix or None,
        dataplane=own or None, rates=rates_json(rates) if rates else None,
        bidirectional=None if both is None else tuple(both), above_cap=tuple(capped),
    )  # fmt: skip


def over_caps(store: Store, exp: Experiment, out: engine.SearchOutcome) -> list[CapExcess]:
    """Each goal's lower bound that lies above a cap netassay set on the SUT, by how much
    and why (``analysis.caps``): judged on the longest trial at that load (the one whose
    bucket adds the least), else the goal's full trial length."""
    caps = lab.installed_caps(exp.metadata, bool(exp.config.get("bidirectional")))
    if not caps:
        return []
    longest: dict[float, float] = {}
    for t in store.trial_records(exp.id):
        longest[t.rate_pps] = max(longest.get(t.rate_pps, 0.0), t.duration_s)
    found = []
    for o in out.goals:
        lo = o.lower_pps
        near = [d for r, d in longest.items() if lo and abs(r - lo) <= 1e-6 * lo]
        duration = max(near, default=o.goal.final_trial_duration_s)
        x = above_cap(o.goal.label, lo, caps, duration, exp.metadata.get("rates"),
                      o.goal.loss_ratio)  # fmt: skip
        if x is not None:
            found.append(x)
    return found


def cap_lines(found: list[CapExcess]) -> list[str]:
    """``over_caps`` in words."""
    return [f"  note: {x.line()}" for x in found]


def extras_lines(extras: StoredExtras, spec: SearchSpec | None = None) -> list[str]:
    """``stored_extras`` in words."""
    out = latency_at.lines(extras.latency_at_bounds)
    out += cap_lines(list(extras.above_cap))
    out += rates_lines(extras.rates) if extras.rates is not None else []
    if extras.latency_bound is not None and spec is not None:
        out += bounds_held.lines(extras.latency_bound, spec)
    out += both_lines(extras.bidirectional) if extras.bidirectional is not None else []
    out += dataplane.json_lines(extras.dataplane) if extras.dataplane else []
    return out + (json_lines(extras.imix) if extras.imix else [])


BOTH = (
    "--bidirectional: the loads and bounds above are both directions' aggregate (FD.io "
    "CSIT's convention: the sum of both directions' loads and frames), each direction "
    "half of it; each direction's own at each goal's lower bound, summed over its trials:"
)


def at_bounds(store: Store, experiment_id: int, out: engine.SearchOutcome) -> list[BothAtBound]:
    """A --bidirectional search's directions at each goal's lower bound: each one's
    sent, received, loss ratio and where it lost, summed over the trials at that load
    (the sweep's per-direction sums, ``shared.directions``)."""
    rows = direction_rows(store, experiment_id)
    at = []
    for o in out.goals:
        lo = o.lower_pps
        row = next((r for r in rows if lo and abs(2 * r.rate_pps_per_direction - lo) <= 1e-6 * lo),
                   None)  # fmt: skip
        if lo is None or row is None:
            continue
        at.append(BothAtBound(o.goal.key, o.goal.label, lo, row.rate_pps_per_direction,
                              row.runs, dict(row.sides)))  # fmt: skip
    return at


def both_lines(found: Sequence[BothAtBound]) -> list[str]:
    """``at_bounds`` in words: a line per goal and direction."""
    out = [BOTH, f"  {'goal':<10} {'aggregate':>10} {'pps/dir':>10} {'trials':>6}  {SIDE_HEADER}"]
    for at in found:
        for d in DIRECTIONS:
            side = side_columns(d, at.sides[d].to_json())
            out.append(
                f"  {at.label:<10} {at.rate_pps_aggregate:>10.0f} "
                f"{at.rate_pps_per_direction:>10.0f} {at.trials:>6}  {side}"
            )
    return out


def report_json(r: SearchReport) -> dict[str, Any]:
    return {
        "kind": KIND,
        "experiment_id": r.experiment_id,
        "db": r.db,
        "generator_peak_pps": r.generator_peak_pps,
        "setup_s": round(r.setup_s, 3),
        **outcome_json(r.outcome),
        "verify": verify_json(r.verify),
        "verify_skipped": r.verify_skipped,
        **stored_extras(r.db, r.experiment_id, r.outcome).to_json(),
    }


def _goal_line(o: engine.GoalOutcome, out: engine.SearchOutcome) -> str:
    g, spec = o.goal, out.spec
    head = f"  {g.label:<10} lower {fmt_rate(o.lower_pps):>11}  upper {fmt_rate(o.upper_pps):>11}"
    head += f"  conditional throughput {fmt_rate(o.conditional_pps):>11}"
    if not out.complete:
        return f"{head}\n{'':13}{_unfinished_note(o)}"
    if o.lower_pps is None and o.upper_pps is not None:
        return f"{head}\n{'':13}no lower bound: loss above the goal already at the min load"
    if _generator_bound(o, out):
        return (
            f"{head}\n{'':13}generator-bound: the SUT carried everything up to the "
            f"generator's reach on this host ({fmt_rate(spec.max_load_pps)}): "
            f"{g.label} >= {fmt_rate(o.lower_pps)}"
        )
    if o.upper_pps is None and o.lower_pps is not None:
        return (
            f"{head}\n{'':13}no upper bound: the max load ({fmt_rate(spec.max_load_pps)}) "
            "meets the goal; the SUT forwards at least that"
        )
    if o.lower_pps is not None and o.upper_pps is not None:
        width = (o.upper_pps - o.lower_pps) / o.upper_pps
        return f"{head}  (width {width:.2%} of {g.relative_width:.2%})"
    return head


def _unfinished_note(o: engine.GoalOutcome) -> str:
    """What the bounds of a search that did not finish are: as measured, or none yet."""
    parts = []
    for what, pps, how in (("lower", o.lower_pps, o.lower_as), ("upper", o.upper_pps, o.upper_as)):
        if pps is None:
            parts.append(f"no {what} bound measured")
        elif how == engine.MEASURED:
            parts.append(f"{what} bound as measured (its duration sum not full)")
        else:
            parts.append(f"{what} bound classified")
    return "unfinished: " + "; ".join(parts)


def outcome_lines(out: engine.SearchOutcome, where: str) -> list[str]:
    per = out.overhead_per_trial_s
    lines = [
        f"search ({where}): {out.trials} trials, {out.trial_time_s:.1f} s of traffic in "
        f"{out.wall_time_s:.1f} s"
        + (f" ({per:.2f} s between trials)" if per is not None else "")
        + f"; loads {fmt_rate(out.spec.min_load_pps)} .. {fmt_rate(out.spec.max_load_pps)}",
        *(_goal_line(o, out) for o in out.goals),
    ]
    if out.stop is not None:
        lines.append(f"  incomplete: {out.stop.message}")
        lines.append(
            "  the search did not finish: a bound 'as measured' rests on fewer trials than the"
            " goal's duration sum (a load that lost more than the goal is an upper bound)"
        )
    return lines


def verify_lines(v: VerifyResult | None, out: engine.SearchOutcome) -> list[str]:
    if v is None:
        return []
    rates = f"{fmt_rate(v.rates_pps[0])} .. {fmt_rate(v.rates_pps[-1])}"
    found = f"the search's {v.goal.label} ({fmt_rate(v.center_pps)})"
    sweep = (
        f"verify: PASTRAMI sweep (experiment {v.experiment_id}): {len(v.rates_pps)} loads "
        f"{rates}, {v.runs} runs of {v.duration_s:g} s: {v.verdict}; its {v.goal.label} "
        f"{fmt_rate(v.pdr_pps)}"
    )
    if v.verified:
        return [sweep, f"  {found} is verified by PASTRAMI: {v.reason}"]
    return [sweep, f"  {found} is NOT verified by PASTRAMI: {v.reason}"]


def report_lines(r: SearchReport) -> list[str]:
    where = f"experiment {r.experiment_id} in {r.db}"
    if r.generator_peak_pps is not None:
        where += f", generator peak {fmt_rate(r.generator_peak_pps)}"
    skipped = [f"verify: no PASTRAMI sweep: {r.verify_skipped}"] if r.verify_skipped else []
    extras = extras_lines(stored_extras(r.db, r.experiment_id, r.outcome), r.outcome.spec)
    return outcome_lines(r.outcome, where) + extras + verify_lines(r.verify, r.outcome) + skipped


def dry_run_lines(
    spec: SearchSpec, est: engine.Estimate, max_measured: bool, settle_s: float
) -> list[str]:
    hi = fmt_rate(spec.max_load_pps)
    lines = [
        f"MLRsearch {MLRSEARCH_VERSION}; goals (every trial counts toward every goal):",
        *(
            f"  {g.label:<10} loss ratio {g.loss_ratio:g}, exceed ratio {g.exceed_ratio:g}, "
            f"width {g.relative_width:.2%}, trials {g.initial_trial_duration_s:g} s .. "
            f"{g.final_trial_duration_s:g} s, duration sum {g.duration_sum_s:g} s"
            for g in spec.goals
        ),
        f"loads: min {fmt_rate(spec.min_load_pps)}, max "
        + (f"98% of the generator's peak, probed when the search starts (shown for {hi})"
           if max_measured else hi),
        f"estimate: {est.trials} trials, {est.trial_time_s:.0f} s of traffic, about "
        f"{est.wall_time_s + est.trials * settle_s:.0f} s: the most that searches on simulated "
        "SUTs took (their capacity anywhere in the range, ideal and flaky); not a bound: a "
        "noisier SUT, or a trial repeated after a fault, takes more",
        f"time cap: {spec.time_cap_s:g} s, the bound (the search stops there and shows what "
        "it found)",
    ]  # fmt: skip
    if est.capped:
        lines.append("  note: some simulated searches reached the time cap")
    return lines


def dry_run(job: SearchJob, as_json: bool) -> str:
    """What a prepared search would run (--dry-run): its testbed, store, goals, the
    worst case of simulated searches, its verify sweep; a resume says so first."""
    nominal = job.max_load_pps or max(600_000.0, 2 * (job.min_load_pps or 0))
    spec = job.spec(nominal)
    est = engine.estimate(spec)
    if as_json:
        obj = {
            "testbed": job.name, "db": job.db, "knobs": asdict(job.testbed),
            "max_load_is_peak": job.max_load_pps is None, "spec": spec.to_json(),
            "worst_case": asdict(est), "verify": asdict(job.verify) if job.verify else None,
            "worst_case_is": "an estimate from simulated SUTs; the time cap is the bound",
            "bidirectional": job.bidirectional,
        }  # fmt: skip
        lines = [json.dumps(obj)]
    else:
        knobs = ", ".join(f"{k}={v}" for k, v in asdict(job.testbed).items() if v is not None)
        lines = [f"testbed '{job.name}': {knobs}", f"store: {job.db}"]
        lines += dry_run_lines(spec, est, job.max_load_pps is None, job.settle_s)
        lines += verify_plan_lines(job.verify, job.settle_s)
        if job.bidirectional:
            lines.append(f"{search_request.BOTH} (the verify sweep's too)")
    if job.resumed is not None:
        lines.insert(0, f"would resume search {job.experiment_id} in {job.db} on '{job.name}'")
    return "\n".join(lines)


def verify_plan_lines(v: VerifyPlan | None, settle_s: float) -> list[str]:
    """The verify sweep a search will run (for --dry-run)."""
    if v is None:
        return []
    n = v.loads * v.runs
    return [
        f"then verify: a PASTRAMI sweep of {v.loads} loads from {1 - v.span:g}x to "
        f"{1 + v.span:g}x the PDR found, {v.runs} runs of {v.duration_s:g} s: {n} trials, "
        f"about {n * (v.duration_s + TRIAL_OVERHEAD_S + settle_s):.0f} s"
    ]
