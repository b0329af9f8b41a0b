"""The MLRsearch wrapper against synthetic SUTs (a ``load -> trial`` function): the search
brackets the known NDR and PDR within the goal width, faults are repeated or stop the
search and are never counted as SUT loss, the time cap holds, and a replay of the stored
trials gives the same result (resume, assess)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from tests.builders import SyntheticSut, cliff

from netassay.analysis.synthetic import realistic_throughput
from netassay.errors import UsageError
from netassay.quality import COUNTER_FAULT, GENERATOR_LIMIT, GENERATOR_STALL
from netassay.shared import search_engine
from netassay.shared.search_spec import (
    Goal,
    GoalOptions,
    SearchSpec,
    make_goals,
    parse_goal,
    parse_ratio,
    verify_goal,
)
from netassay.trial.record import TrialRecord

CAP = 60_000.0
NDR, PDR = Goal(0.0), Goal(0.005)


def spec(*goals: Goal, lo: float = 6_000, hi: float = 600_000, cap: float = 1200) -> SearchSpec:
    return SearchSpec(goals or (NDR, PDR), lo, hi, cap)


def search(sut: SyntheticSut, sp: SearchSpec | None = None, **kw) -> search_engine.SearchOutcome:  # type: ignore[no-untyped-def]
    return search_engine.run_search(sp or spec(), sut, clock=sut.clock, **kw)


def assert_brackets(o: search_engine.GoalOutcome, truth: float) -> None:
    assert o.lower_pps is not None and o.upper_pps is not None, o
    assert o.lower_pps <= truth * (1 + 1e-9) and truth <= o.upper_pps * (1 + 1e-9), (o, truth)
    assert (o.upper_pps - o.lower_pps) / o.upper_pps <= o.goal.relative_width * (1 + 1e-6)
    assert o.conditional_pps is not None and o.conditional_pps <= o.lower_pps


def by_goal(out: search_engine.SearchOutcome) -> dict[str, search_engine.GoalOutcome]:
    return {o.goal.key: o for o in out.goals}


# -- known curves -------------------------------------------------------------------
def test_ideal_cliff_ndr_and_pdr_are_bracketed_within_the_goal_width():
    sut = SyntheticSut(cliff(CAP))
    out = search(sut)
    assert out.complete and out.stop is None
    got = by_goal(out)
    assert_brackets(got["ndr"], CAP)  # zero loss up to C
    assert_brackets(got["pdr:0.005"], CAP / (1 - 0.005))  # PLR = 1 - C/O reaches 0.5% there
    # the conditional throughput is what the SUT forwards at the lower bound: <= C
    assert got["pdr:0.005"].conditional_pps <= CAP * (1 + 1e-9)
    assert got["pdr:0.005"].conditional_pps >= CAP * (1 - 0.005)
    # every trial is counted, and the trial time is the traffic time
    assert out.trials == out.attempts == len(sut.calls)
    assert out.trial_time_s == pytest.approx(sum(c[3] for c in sut.calls))


def test_far_fewer_trials_than_a_linear_sweep_of_the_same_resolution():
    """CSIT's defaults: 1 s trials, 21 s duration sum. A PASTRAMI sweep that resolves
    0.5% at 60 kpps over the same range needs ~2000 loads x K trials."""
    out = search(SyntheticSut(cliff(CAP)))
    assert out.trial_time_s <= 80


def test_realistic_curve_of_the_paper():
    """Eq. 4-5: small losses rising smoothly to 1% at O_sat = 1 Mpps; losses counted
    exactly (expected values), so the truth is where they cross each goal."""
    sat = 1e6

    def delivered(load: float, duration: float, k: int) -> float:
        sent = round(load * duration)
        plr = 1 - float(realistic_throughput(np.array([load]), sat)[0]) / load
        return sent - round(sent * plr)  # lost frames grow with the load: one crossing

    def lost_ratio(load: float) -> float:
        sent = round(load)
        return (sent - min(sent, delivered(load, 1.0, 0))) / sent

    def crossing(goal: float) -> float:  # highest load meeting the goal (monotone curve)
        lo, hi = 1e5, 1.4e6
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if lost_ratio(mid) <= goal else (lo, mid)
        return lo

    out = search(SyntheticSut(delivered), spec(lo=1e5, hi=1.4e6))
    got = by_goal(out)
    assert_brackets(got["ndr"], crossing(0.0))
    assert_brackets(got["pdr:0.005"], crossing(0.005))
    assert crossing(0.005) == pytest.approx(987_200, rel=1e-3)  # x^4 = 5.699/6


def test_noisy_curve_binomial_loss():
    rng = np.random.default_rng(7)

    def delivered(load: float, duration: float, k: int) -> int:
        sent = round(load * duration)
        plr = 0.0 if load <= CAP else 1 - CAP / load
        return sent - int(rng.binomial(sent, plr))

    got = by_goal(search(SyntheticSut(delivered)))
    assert_brackets(got["ndr"], CAP)
    # binomial noise of ~0.03% around the 0.5% crossing: allow one goal width
    o = got["pdr:0.005"]
    truth = CAP / 0.995
    assert o.lower_pps * (1 - 0.005) <= truth <= o.upper_pps * (1 + 0.005), o


def test_several_goals_at_once_share_trials():
    goals = (NDR, PDR, Goal(0.01))
    sut = SyntheticSut(cliff(CAP))
    out = search(sut, spec(*goals))
    got = by_goal(out)
    assert_brackets(got["pdr:0.01"], CAP / 0.99)
    assert got["ndr"].lower_pps < got["pdr:0.005"].lower_pps < got["pdr:0.01"].lower_pps
    alone = search(SyntheticSut(cliff(CAP)), spec(Goal(0.01)))
    assert out.trials < alone.trials * 3  # three goals cost less than three searches


# -- range limits ----------------------------------------------------------------------
def test_loss_already_at_the_min_load_is_a_result_not_a_crash():
    out = search(SyntheticSut(cliff(1_000)), spec(lo=6_000))
    for o in out.goals:
        assert o.lower_pps is None and o.conditional_pps is None
        assert o.upper_pps == pytest.approx(6_000)
    assert out.complete


def test_capacity_above_the_max_load_has_no_upper_bound():
    out = search(SyntheticSut(cliff(1e6)), spec(hi=600_000))
    for o in out.goals:
        assert o.upper_pps is None and o.lower_pps == pytest.approx(600_000)


# -- trials it can trust ---------------------------------------------------------------
def test_faulty_attempts_are_repeated_and_never_counted_as_loss():
    """Every 4th attempt is a generator stall that loses half the frames; repeated, the
    search takes exactly the path (and result) of a search without faults."""
    clean = search(SyntheticSut(cliff(CAP)))
    sut = SyntheticSut(
        cliff(CAP), fault=lambda n, load: f"{GENERATOR_STALL}: late" if n % 4 == 0 else None
    )
    stored: list[TrialRecord] = []
    out = search(sut, on_trial=lambda ev: stored.append(ev.record), retries=2)
    assert out.complete
    for a, b in zip(out.goals, clean.goals, strict=True):
        assert (a.lower_pps, a.upper_pps, a.conditional_pps) == (
            b.lower_pps,
            b.upper_pps,
            b.conditional_pps,
        )
    assert out.trials == clean.trials and out.attempts > out.trials
    assert out.trial_time_s > clean.trial_time_s  # the discarded attempts cost time
    assert all(r.excluded is None for r in stored)  # what is stored is the good attempt
    redone = [r for r in stored if any("discarded" in w for w in r.warnings)]
    assert redone and all(r.counters["search"]["attempts"] == 2 for r in redone)


def test_a_persistent_fault_stops_the_search_instead_of_converging_on_it():
    """The sink's counter fails above 300 kpps; the SUT forwards 500 kpps. The search
    must not take the fault for the SUT's loss: it stops, and says why."""
    limit = 300_000.0
    sut = SyntheticSut(
        cliff(500_000),
        fault=lambda n, load: f"{COUNTER_FAULT}: the sink's count" if load > limit else None,
    )
    stored: list[TrialRecord] = []
    out = search(sut, spec(hi=600_000), on_trial=lambda ev: stored.append(ev.record), retries=2)
    assert out.stop is not None and out.stop.kind == search_engine.FAULT
    assert COUNTER_FAULT in out.stop.detail
    assert len(sut.calls) == 3  # the first trial, at the max load, and two repeats
    assert [r.excluded is not None for r in stored] == [True]
    assert stored[0].counters["search"]["goals"]["ndr"]["trial"] == search_engine.UNUSABLE
    for o in out.goals:  # nothing was concluded from it
        assert o.upper_pps is None and o.lower_pps is None


def test_retries_zero_stops_at_the_first_fault():
    sut = SyntheticSut(
        cliff(CAP), fault=lambda n, load: f"{GENERATOR_STALL}: x" if n == 2 else None
    )
    out = search(sut, retries=0)
    assert out.stop is not None and out.stop.kind == search_engine.FAULT and len(sut.calls) == 2


def test_forwarded_counts_the_sinks_own_drops_as_delivered():
    rec = TrialRecord(0, 0, 1000.0, 1.0, 1000, 990, "x", sink_dropped=10)
    assert search_engine.loss_ratio(rec) == 0.0
    assert search_engine._result(rec, 1.0, 1000.0).loss_ratio == 0.0


# -- time cap --------------------------------------------------------------------------
def test_time_cap_stops_before_a_trial_would_end_past_it_and_keeps_the_bounds():
    sut = SyntheticSut(cliff(CAP))
    out = search(sut, spec(cap=30))
    assert out.stop is not None and out.stop.kind == search_engine.TIME_CAP
    assert sut.now <= 30 + 0.2  # the last trial started before the cap, ended by it
    assert out.trials == len(sut.calls) > 0
    assert any(o.lower_pps or o.upper_pps for o in out.goals)


# -- stored trials: classification, replay, resume ---------------------------------------
def _run_and_store(
    sp: SearchSpec | None = None,
) -> tuple[search_engine.SearchOutcome, list[TrialRecord]]:
    stored: list[TrialRecord] = []
    out = search(SyntheticSut(cliff(CAP)), sp, on_trial=lambda ev: stored.append(ev.record))
    return out, stored


def test_each_stored_trial_carries_its_goal_classification():
    out, stored = _run_and_store()
    assert [r.counters["search"]["trial"] for r in stored] == list(range(1, len(stored) + 1))
    keys = {(r.load_index, r.repetition) for r in stored}
    assert len(keys) == len(stored)  # (load index, repetition) unique: the store's key
    firsts: dict[float, int] = {}
    for r in stored:
        firsts.setdefault(r.rate_pps, r.load_index)
        assert firsts[r.rate_pps] == r.load_index  # one stable index per load
        info = r.counters["search"]
        for key, g in info["goals"].items():
            lr = {"ndr": 0.0, "pdr:0.005": 0.005}[key]
            assert g["trial"] == ("good" if info["loss_ratio"] <= lr else "bad")
            assert g["load"] in (search_engine.LOWER, search_engine.UPPER, search_engine.UNDECIDED)
    ndr = by_goal(out)["ndr"]
    last_at_lower = [r for r in stored if r.rate_pps == ndr.lower_pps][-1]
    assert last_at_lower.counters["search"]["goals"]["ndr"]["load"] == search_engine.LOWER


def test_replay_of_the_stored_trials_gives_the_same_result():
    out, stored = _run_and_store()
    again = search_engine.run_search(spec(), None, stored=list(reversed(stored)), live=False)
    assert again.complete and again.replayed == len(stored) == again.trials
    for a, b in zip(out.goals, again.goals, strict=True):
        assert (a.lower_pps, a.upper_pps, a.conditional_pps) == (
            b.lower_pps,
            b.upper_pps,
            b.conditional_pps,
        )


def test_a_search_killed_mid_way_resumes_from_its_stored_trials():
    out, stored = _run_and_store()
    part = stored[:9]
    partial = search_engine.run_search(spec(), None, stored=part, live=False)
    assert partial.stop is not None and partial.stop.kind == search_engine.STORED_END
    sut = SyntheticSut(cliff(CAP))
    more: list[TrialRecord] = []
    resumed = search_engine.run_search(
        spec(), sut, stored=part, clock=sut.clock, on_trial=lambda ev: more.append(ev.record)
    )
    assert resumed.complete and len(sut.calls) == len(stored) - 9
    assert [ev.counters["search"]["trial"] for ev in more if True][-1] == len(stored)
    keys = [(r.load_index, r.repetition) for r in part + [m for m in more if m not in part]]
    assert len(set(keys)) == len(stored)  # new trials never reuse a stored key
    for a, b in zip(out.goals, resumed.goals, strict=True):
        assert a.conditional_pps == b.conditional_pps


def test_a_stored_search_that_does_not_match_the_spec_is_not_taken_as_its_result():
    _, stored = _run_and_store()
    other = spec(Goal(0.0, duration_sum_s=5.0), PDR)
    out = search_engine.run_search(other, None, stored=stored, live=False)
    assert out.stop is not None and out.stop.kind == search_engine.STORED_END


# -- spec, goals, estimate ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ratio"), [("ndr", 0.0), ("pdr", 0.005), ("pdr:0.01", 0.01), ("PDR:0.5%", 0.005)]
)
def test_goal_parsing(text, ratio):
    assert parse_goal(text) == pytest.approx(ratio)


@pytest.mark.parametrize(
    "text", ["pdr:1", "pdr:-0.1", "pdr:x", "xdr", "ndr:0.1", "pdr:", "pdr:nan"]
)
def test_bad_goals_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_goal(text)


@pytest.mark.parametrize(
    "opt",
    [
        GoalOptions(width=0.0),
        GoalOptions(width=-0.01),
        GoalOptions(width=1.0),
        GoalOptions(exceed_ratio=1.0),
        GoalOptions(initial_duration_s=2.0, final_duration_s=1.0),
        GoalOptions(final_duration_s=5.0, duration_sum_s=2.0),
        GoalOptions(goals=("ndr", "ndr")),
    ],
)
def test_bad_goal_options_are_usage_errors(opt):
    with pytest.raises(UsageError):
        SearchSpec(make_goals(opt), 1e3, 1e5).validate()


@pytest.mark.parametrize(
    ("lo", "hi", "cap"), [(1e5, 1e5, 600), (2e5, 1e5, 600), (0, 1e5, 600), (1e3, 1e5, 1.0)]
)
def test_bad_range_or_time_cap(lo, hi, cap):
    with pytest.raises(UsageError):
        SearchSpec((NDR,), lo, hi, cap).validate()


def test_goal_defaults_follow_csit_and_the_shared_flags():
    g = make_goals(GoalOptions())
    assert [x.key for x in g] == ["ndr", "pdr:0.005"]
    assert (g[0].final_trial_duration_s, g[0].duration_sum_s, g[0].relative_width) == (
        1.0,
        21.0,
        0.005,
    )
    g = make_goals(GoalOptions(("pdr:0.01",), width=0.01, final_duration_s=5.0))
    assert g[0].initial_trial_duration_s == 1.0 and g[0].final_trial_duration_s == 5.0
    assert parse_ratio("0.5%", "w") == pytest.approx(0.005)
    assert verify_goal((NDR, Goal(0.01), PDR)) == PDR
    assert verify_goal((NDR, Goal(0.02), Goal(0.01))) == Goal(0.01)
    assert verify_goal((NDR,)) is None


def test_spec_round_trips_through_json():
    sp = spec(NDR, Goal(0.01, duration_sum_s=5.0), cap=300)
    assert SearchSpec.from_json(sp.to_json()) == sp


def test_estimate_is_the_costliest_simulated_search():
    est = search_engine.estimate(spec())
    assert 10 <= est.trials <= 200 and not est.capped
    assert est.wall_time_s > est.trial_time_s
    out = search(SyntheticSut(cliff(CAP)))
    assert out.trial_time_s <= est.trial_time_s
    assert math.isfinite(est.wall_time_s)


# -- what a user reads -----------------------------------------------------------------
def test_text_and_json_of_a_result():
    from netassay.methods.search import view
    from netassay.methods.search.run import SearchReport, VerifyResult, progress_line

    events: list[search_engine.TrialEvent] = []
    out = search(SyntheticSut(cliff(CAP)), on_trial=events.append)
    v = VerifyResult(7, PDR, 60_000.0, [48_000.0, 72_000.0], 3, 1.0, "GOOD", "held", 60_100.0)
    rep = SearchReport(3, "lab.db", out, 600_000.0, 4.2, v)
    text = "\n".join(view.report_lines(rep))
    assert "experiment 3 in lab.db, generator peak 600 kpps" in text
    assert "PDR@0.5%" in text and "conditional throughput" in text
    assert "is verified by PASTRAMI" in text
    js = view.report_json(rep)
    assert js["kind"] == "search" and js["verify"]["verified"] is True
    assert js["goals"][1]["conditional_throughput_pps"] == out.goals[1].conditional_pps
    line = progress_line(events[-1], {"ndr": "NDR", "pdr:0.005": "PDR@0.5%"})
    assert line.startswith(f"[{out.trials}] ") and "NDR [" in line and "PDR@0.5% [" in line


def test_text_says_what_a_missing_bound_means():
    from netassay.methods.search import view

    above = search(SyntheticSut(cliff(1e6)), spec(hi=600_000))
    assert "no upper bound: the max load (600 kpps) meets the goal" in "\n".join(
        view.outcome_lines(above, "x")
    )
    below = search(SyntheticSut(cliff(1_000)), spec(lo=6_000))
    assert "no lower bound: loss above the goal already at the min load" in "\n".join(
        view.outcome_lines(below, "x")
    )
    capped = search(SyntheticSut(cliff(CAP)), spec(cap=10))
    assert "incomplete: the time cap (10 s) is reached" in "\n".join(
        view.outcome_lines(capped, "x")
    )


def test_verify_grid_is_centred_on_the_pdr_and_stops_at_the_max_load():
    from netassay.methods.search.run import VerifyPlan

    vp = VerifyPlan(runs=3, duration_s=1.0, span=0.2, loads=9)
    assert vp.rates(60_000, 1e6) == [48_000 + 3_000 * j for j in range(9)]
    assert max(vp.rates(60_000, 66_000)) <= 66_000
    with pytest.raises(UsageError):
        VerifyPlan(runs=1).validate()
    with pytest.raises(UsageError):
        VerifyPlan(span=1.0).validate()


def test_the_time_cap_also_bounds_the_repeats_of_a_faulty_trial():
    sut = SyntheticSut(
        cliff(CAP), fault=lambda n, load: f"{GENERATOR_STALL}: x" if n >= 5 else None
    )
    out = search(sut, spec(cap=8), retries=10)
    assert out.stop is not None and out.stop.kind == search_engine.TIME_CAP, out.stop
    assert "a repeat of a measurement fault" in out.stop.message
    assert sut.now <= 8 + 0.2


# -- a search that did not finish (issue: a false PDR from an unfinished search) ---------
def test_an_unfinished_search_reports_its_bounds_as_measured_never_the_max_load_as_met():
    """The case a user met: a SUT capped at 100 kpps, max load 150 kpps, a time cap that
    ends the search before MLRsearch classifies the max load. Its own 150 kpps trial
    lost a third: that load (and any other that lost more than the goal) is an upper
    bound, and no text says the max load meets the goal."""
    from netassay.methods.search import view

    for cap in (5, 10, 20, 30):
        sut = SyntheticSut(cliff(100_000))
        out = search(sut, spec(lo=1_500, hi=150_000, cap=cap))
        assert out.stop is not None and out.stop.kind == search_engine.TIME_CAP
        text = "\n".join(view.outcome_lines(out, "x"))
        assert "meets the goal" not in text and "the SUT forwards at least" not in text
        assert "already at the min load" not in text  # the min load was never measured
        assert "did not finish" in text
        for o in out.goals:
            assert o.upper_pps is not None and o.upper_pps <= 101_981, (cap, o)
            truth = 100_000 / (1 - o.goal.loss_ratio)  # the highest load meeting the goal
            assert o.lower_pps is not None and o.lower_pps <= truth < o.upper_pps, (cap, o)
            assert search_engine.MEASURED in (o.lower_as, o.upper_as) and not o.reached
        js = view.outcome_json(out)
        assert js["complete"] is False
        for g in js["goals"]:
            assert g["reached"] is False and g["relevant_upper_bound_pps"] <= 101_981
            assert {g["lower_bound_as"], g["upper_bound_as"]} <= {
                search_engine.MEASURED,
                search_engine.CLASSIFIED,
            }


def test_a_replayed_unfinished_search_says_the_same_as_the_live_one():
    """``assess`` re-reads a stored search by replay: same bounds, same words."""
    stored: list[TrialRecord] = []
    live = search(SyntheticSut(cliff(100_000)), spec(lo=1_500, hi=150_000, cap=20),
                  on_trial=lambda ev: stored.append(ev.record))  # fmt: skip
    again = search_engine.run_search(
        spec(lo=1_500, hi=150_000, cap=20), None, stored=stored, live=False
    )
    assert again.stop is not None and again.stop.kind == search_engine.STORED_END
    for a, b in zip(live.goals, again.goals, strict=True):
        assert (a.lower_pps, a.upper_pps, a.lower_as, a.upper_as) == (
            b.lower_pps, b.upper_pps, b.lower_as, b.upper_as
        )  # fmt: skip


def test_a_finished_search_keeps_mlrsearchs_classified_bounds():
    out = search(SyntheticSut(cliff(CAP)))
    assert out.complete
    for o in out.goals:
        assert (o.lower_as, o.upper_as) == (
            search_engine.CLASSIFIED,
            search_engine.CLASSIFIED,
        ) and o.reached


def test_measured_class_follows_the_exceed_ratio_over_trial_time():
    g = Goal(0.005)
    assert search_engine.measured_class([(1.0, 0.33)], g) == search_engine.UPPER
    assert search_engine.measured_class([(1.0, 0.0)], g) == search_engine.LOWER
    assert (
        search_engine.measured_class([(1.0, 0.01), (1.0, 0.0)], g) == search_engine.LOWER
    )  # half: allowed
    assert (
        search_engine.measured_class([(1.0, 0.01), (1.0, 0.01), (1.0, 0.0)], g)
        == search_engine.UPPER
    )


# -- the generator's reach (issue: a busy host degrades the answer, never the run) -----
def _reach_limited(sut: SyntheticSut, reach: float) -> search_engine.TrialFn:
    """``sut`` behind a generator that paces at most ``reach`` (a generator limit above)."""

    def trial(i: int, k: int, load: float, duration: float) -> TrialRecord:
        rec = sut(i, k, load, duration)
        if load <= reach:
            return rec
        warning = f"{GENERATOR_LIMIT}: achieved {reach:.0f} of {load:.0f} offered"
        return replace(rec, achieved_rate_pps=reach, warnings=[warning])

    return trial


def test_a_generator_limit_at_the_max_load_is_its_reach_and_a_restart_goes_on_below_it():
    """The SUT forwards everything (1 Mpps); the generator reaches 400 kpps of the
    600 kpps max load. The search stops at once with the reach (never a fault), and
    restarted below it (epoch 1, the run layer's step) it ends: no upper bound, each
    goal at least the reach, with the first epoch's trials counted and numbered past."""
    sut = SyntheticSut(cliff(1e6))
    stored: list[TrialRecord] = []
    first = search_engine.run_search(
        spec(hi=600_000), _reach_limited(sut, 400_000), clock=sut.clock, retries=2,
        on_trial=lambda ev: stored.append(ev.record),
    )  # fmt: skip
    assert first.stop is not None and first.stop.kind == search_engine.REACH
    assert first.stop.reach_pps == 400_000 and len(stored) == 1 and stored[0].excluded
    lower = replace(spec(hi=392_000), epoch=1, reach_pps=400_000)
    out = search_engine.run_search(
        lower, _reach_limited(sut, 400_000), clock=sut.clock, stored=list(stored),
        on_trial=lambda ev: stored.append(ev.record),
    )  # fmt: skip
    assert out.complete
    for o in out.goals:
        assert o.upper_pps is None and o.lower_pps == pytest.approx(392_000)
    keys = [(r.load_index, r.repetition) for r in stored]
    assert len(set(keys)) == len(keys)  # the store's unique key holds across the restart
    assert [r.counters["search"]["trial"] for r in stored] == list(range(1, len(stored) + 1))
    assert all(r.counters["search"].get("epoch") == 1 for r in stored[1:])
    again = search_engine.run_search(
        lower, None, stored=stored, live=False
    )  # a re-read of the store
    assert [o.lower_pps for o in again.goals] == [o.lower_pps for o in out.goals]
    assert again.trials == out.trials == len(stored)


def test_a_generator_limit_that_stays_below_the_max_load_is_the_reach_too():
    """The max load was paced, then the host got busier: a limit that stays one after its
    repeats at a lower load is the reach now. One that leaves no range above the min
    load (or whose achieved rate is unknown) stops the search as a fault."""

    def limited(achieved: float | None) -> search_engine.TrialFn:
        sut = SyntheticSut(cliff(CAP))

        def trial(i: int, k: int, load: float, duration: float) -> TrialRecord:
            rec = sut(i, k, load, duration)
            if load >= 500_000:
                return rec
            return replace(rec, achieved_rate_pps=achieved, warnings=[f"{GENERATOR_LIMIT}: x"])

        return trial

    out = search_engine.run_search(spec(hi=600_000), limited(59_000))
    assert (
        out.stop is not None
        and out.stop.kind == search_engine.REACH
        and out.stop.reach_pps == 59_000
    )
    assert (
        search_engine.run_search(spec(hi=600_000), limited(6_000)).stop.kind == search_engine.FAULT
    )
    assert (
        search_engine.run_search(spec(hi=600_000), limited(None)).stop.kind == search_engine.FAULT
    )


def test_a_stall_whose_loss_exceeds_every_goal_even_without_its_burst_is_used():
    """A 1 ms stall at 100 kpps leaves a burst of 100 frames; the trial lost 50,000: with
    or without the burst it fails every goal, so it is used and the stall is a note."""
    stall = f"{GENERATOR_STALL}: a send was 1.0 ms late; its catch-up burst"
    gen = {"lateness_max_ns": 1_000_000}
    rec = TrialRecord(0, 0, 100_000.0, 1.0, 100_000, 50_000, "x", warnings=[stall],
                      counters={"generator": gen})  # fmt: skip
    used = search_engine._stall_outweighed(rec, spec())
    assert used.excluded is None and used.warnings[0].startswith("stall without harm")
    # 300 frames lost, a burst of 100: without the burst 0.2% < the PDR goal's 0.5%
    close = replace(rec, received=99_700)
    assert search_engine._stall_outweighed(close, spec()).excluded
    # a stall of unknown length is never excused
    unknown = replace(rec, counters={})
    assert search_engine._stall_outweighed(unknown, spec()).excluded


def test_the_json_of_a_generator_bound_search_keeps_its_keys_in_order():
    """A max load lowered to the generator's reach: the outcome's JSON says the reach
    between the search's totals and its goals, a goal the SUT met there says
    ``generator_bound`` last, and the text says what that bound is."""
    from netassay.methods.search import view

    out = search(SyntheticSut(cliff(1e6)), replace(spec(hi=300_000), reach_pps=300_000.0))
    js = view.outcome_json(out)
    keys = list(js)
    assert keys[-2:] == ["generator_reach_pps", "goals"] and keys[-3] == "mlrsearch"
    assert js["generator_reach_pps"] == 300_000.0
    for g in js["goals"]:
        assert list(g)[-1] == "generator_bound" and g["generator_bound"] is True
    assert "generator-bound" in "\n".join(view.outcome_lines(out, "x"))
    plain = view.outcome_json(search(SyntheticSut(cliff(1e6)), spec(hi=300_000)))
    assert "generator_reach_pps" not in plain
    assert all("generator_bound" not in g for g in plain["goals"])


def test_a_search_s_extras_say_a_bound_above_a_cap_as_the_cap_computed_it():
    """The extras keep each bound above a cap as found (no round trip through JSON):
    the text is the excess's own line, bits and layer included; the JSON has only the
    extras there are, in the order --json has always written them."""
    from netassay.analysis.caps import Cap, CapExcess
    from netassay.methods.search import view

    x = CapExcess("PDR@0.5%", 61_000.0, Cap("--sut-cap", 60_000.0, 1_200), 1.0, 672.0, "L1",
                  0.005)  # fmt: skip
    extras = view.StoredExtras(above_cap=(x,))
    assert view.extras_lines(extras) == [f"  note: {x.line()}"] and "at L1" in x.line()
    assert extras.to_json() == {"above_cap": [x.to_json()]}
    both = view.StoredExtras(above_cap=(x,), dataplane={"sut": "x"}, imix={"mix": "simple"})
    assert list(both.to_json()) == ["imix", "dataplane", "above_cap"]
    assert view.StoredExtras().to_json() == {}
    assert view.stored_extras("/nonexistent.db", None, search(SyntheticSut(cliff(CAP)))) == (
        view.StoredExtras()
    )
