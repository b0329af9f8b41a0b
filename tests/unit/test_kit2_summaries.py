"""The stored summaries of burst, recovery and reconfig, read from a store written by
hand: each field against the trials it came from, and the JSON object (``--json``,
``assess --json``) with exactly the keys it has always had."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netassay.analysis import recovery
from netassay.config import AnalysisConfig
from netassay.methods.burst.method import METHOD as BURST
from netassay.methods.reconfig.method import METHOD as RECONFIG
from netassay.methods.recovery.method import METHOD as RECOVERY
from netassay.store.db import Store
from netassay.trial.record import TrialRecord

FAULT = "counter fault: the sink's count went back"


def _experiment(st: Store, kind: str, config: dict[str, Any]) -> int:
    exp, _ = st.add_experiment(key=kind, kind=kind, source="netassay", label=kind,
                               config=config)  # fmt: skip
    return exp


def _burst(st: Store) -> None:
    """Four tests at 100 kpps, 5,000 frames at most: results 1,052, 5,000 (at the limit),
    none (a fault) and 1,060."""
    exp = _experiment(st, "burst", {
        "rate_pps": 100_000.0, "max_frames": 5_000, "tests": 4, "resolution": 0.01,
        "wait_s": 2.0, "throughput": "pdr", "throughput_pps": 5_000,
        "throughput_from": {"search_experiment": 7},
    })  # fmt: skip
    steps = [(0, 5_000, False, None), (0, 2_500, True, None), (0, 1_052, True, 1_052),
             (1, 5_000, True, 5_000), (2, 5_000, False, None), (2, 2_500, None, None),
             (3, 5_000, False, None), (3, 1_060, True, 1_060)]  # fmt: skip
    for k, (test, frames, lossless, result) in enumerate(steps):
        own: dict[str, Any] = {"test": test, "step": k, "frames": frames}
        if lossless is None:
            own["incomplete"] = True
        else:
            own["lossless"] = lossless
        if result is not None:
            own |= {"result": result, "at_limit": result == 5_000}
        st.add_trial(exp, TrialRecord(
            test, k, 100_000.0, frames / 1e5, frames, frames if lossless else frames - 3,
            "netassay", counters={"burst": own}, warnings=[] if lossless is not None else [FAULT],
        ))  # fmt: skip


def _drained(queue: int) -> list[list[float]]:
    """The sink's count every 10 ms from A (0.5 s) while ``queue`` frames drain at
    10 kpps fed at 5.5 kpps: the recovery is at queue / 4,500 s."""
    empty, out = queue / 4_500, []
    for k in range(101):
        t = k / 100
        got = 10_000 * t if t <= empty else 10_000 * empty + 5_500 * (t - empty)
        out.append([round(0.5 + t, 6), round(got) + 700])
    return [[0.0, 0], [0.25, 300], *out]


def _recovery(st: Store) -> None:
    exp = _experiment(st, "recovery", {
        "throughput": "pdr", "overload": 1.1, "overload_s": 0.5, "recover_s": 1,
        "interval_s": 0.01, "trials": 3, "wait_s": 2.0, "throughput_pps": 10_000,
        "throughput_from": {"search_experiment": 3}, "overload_pps": 11_000.0,
        "low_pps": 5_500.0, "capped": False,
    })  # fmt: skip
    for k, queue in enumerate((900, 0, 1_350)):
        own = {"t_drop_s": 0.5, "samples": _drained(queue)}
        st.add_trial(exp, TrialRecord(
            0, k, 8_000.0, 1.5, 12_000, 11_000 - 200 * k, "netassay", sink_dropped=k,
            counters={"recovery": own}, warnings=[FAULT] if k == 2 else [],
        ))  # fmt: skip


def _reconfig(st: Store) -> None:
    exp = _experiment(st, "reconfig", {
        "change": "sh b.sh", "undo": None, "rate": "20k", "rate_pps": 20_000.0,
        "rate_from": None, "duration_s": 3.0, "at_s": 0.5, "trials": 3,
    })  # fmt: skip
    for k, lost in enumerate((4_000, 3_000, 2_000)):
        deltas = {"sut/dp/datapath/pipeline_drops": lost} if k == 0 else {}
        own = {"lost": lost, "blocked_s": lost / 20_000, **({"seconds": 0.25} if k else {})}
        st.add_trial(exp, TrialRecord(
            0, k, 20_000.0, 3.0, 60_000, 60_000 - lost, "netassay",
            loss_location={"sut_forward": lost, "sut_ingress": 0},
            counters={"reconfig": own, "deltas": deltas}, warnings=[FAULT] if k == 2 else [],
        ))  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "kit2.db")
    with Store(path) as st:
        _burst(st)
        _recovery(st)
        _reconfig(st)
    return path


def _one(method: Any, db: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The one stored result of ``method``, its JSON object and its campaign cell."""
    (r,) = list(method.analyse([Path(db)], AnalysisConfig()))
    with Store(db, readonly=True) as st:
        cell = method.cell(st, r.experiment, AnalysisConfig())
    return r, json.loads(method.view(r, True)), cell


def test_a_burst_summary_from_its_tests(db: str) -> None:
    r, obj, cell = _one(BURST, db)
    s = r.summary
    assert s.per_test == [1_052, 5_000, None, 1_060]
    assert (s.tests, s.tests_planned, s.tests_incomplete, s.at_limit) == (3, 4, 1, 1)
    assert (s.bursts, s.bursts_excluded) == (8, 1)
    assert s.mean_frames == pytest.approx((1_052 + 5_000 + 1_060) / 3)
    assert (s.min_frames, s.max_found_frames) == (1_052, 5_000)
    assert s.corrected_buffer_s == pytest.approx(s.mean_frames / 1e5 * 0.95)
    assert sorted(obj) == sorted([
        "kind", "label", "experiment_id", "db", "method", "tests", "rate_pps",
        "throughput_pps", "max_frames", "at_limit", "mean_frames", "min_frames",
        "max_found_frames", "std_frames", "ci95_frames", "implied_buffer_s",
        "corrected_buffer_s", "buffered_frames", "tests_planned", "tests_incomplete",
        "bursts", "bursts_excluded", "throughput", "throughput_from", "resolution",
        "wait_s", "per_test",
    ])  # fmt: skip
    assert obj["per_test"] == [1_052, 5_000, None, 1_060]
    assert obj["throughput_from"] == {"search_experiment": 7}
    assert obj["throughput_pps"] == 5_000 and isinstance(obj["throughput_pps"], int)  # as given
    assert cell == {
        "verdict": None, "rate_pps": 100_000.0, "mean_frames": s.mean_frames,
        "ci95_frames": s.ci95_frames, "implied_buffer_s": s.implied_buffer_s,
        "corrected_buffer_s": s.corrected_buffer_s, "tests": 3, "at_limit": 1,
        "mean_frames_at_least": True,  # a test at the longest burst tried: a floor
    }  # fmt: skip


def test_a_recovery_summary_from_its_trials(db: str) -> None:
    r, obj, cell = _one(RECOVERY, db)
    s = r.summary
    assert (s.trials, s.recovered, s.trials_stored, s.trials_excluded) == (2, 2, 3, 1)
    times = [t.recovery_s for t in s.per_trial]
    assert times == [pytest.approx(0.2, abs=0.002), 0.0, pytest.approx(0.3, abs=0.002)]
    assert s.mean_s == pytest.approx(0.1, abs=0.001)  # the excluded trial's 0.3 s left out
    assert [t.lost for t in s.per_trial] == [1_000, 1_199, 1_398]
    assert s.per_trial[2].excluded == FAULT and s.per_trial[0].excluded is None
    assert sorted(obj) == sorted([
        "kind", "label", "experiment_id", "db", "method", "how", "throughput",
        "throughput_pps", "throughput_from", "overload", "overload_pps", "low_pps", "capped",
        "overload_s", "recover_s", "interval_s", "trials", "recovered", "mean_s", "ci95_s",
        "min_s", "max_s", "trials_planned", "trials_stored", "trials_excluded", "per_trial",
    ])  # fmt: skip
    assert obj["per_trial"][0] == {
        "trial": 0, "recovery_s": s.per_trial[0].recovery_s, "lost": 1_000, "sent": 12_000,
        "settled_frames": s.per_trial[0].settled_frames, "excluded": None,
    }  # fmt: skip
    assert obj["recover_s"] == 1 and isinstance(obj["recover_s"], int)  # as configured
    assert cell == {
        "verdict": None, "throughput_pps": 10_000, "overload_pps": 11_000.0, "mean_s": s.mean_s,
        "ci95_s": s.ci95_s, "recovered": 2, "trials": 2,
    }  # fmt: skip


def test_a_trials_recovery_is_stored_as_it_was_a_dict() -> None:
    found = recovery.recovery([(t, c) for t, c in _drained(900)], 0.5, 5_500.0)
    out = found.to_json()
    assert list(out) == ["recovery_s", "settled_frames", "noise_frames", "intervals_after",
                         "after"]  # fmt: skip
    assert out["recovery_s"] == pytest.approx(0.2, abs=0.002)
    assert out["settled_frames"] == pytest.approx(-900, abs=5)
    assert json.loads(json.dumps(out))["after"][:2] == [[0.0, 0.01, 100], [0.01, 0.01, 100]]


def test_a_reconfig_summary_from_its_trials(db: str) -> None:
    r, obj, cell = _one(RECONFIG, db)
    s = r.summary
    assert (s.trials, s.lost, s.trials_stored, s.trials_excluded) == (2, 7_000, 3, 1)
    assert s.mean_blocked_s == pytest.approx(0.175)
    assert [t.change_s for t in s.per_trial] == [None, 0.25, 0.25]
    assert sorted(obj) == sorted([
        "kind", "label", "experiment_id", "db", "how", "change", "undo", "rate", "rate_pps",
        "rate_from", "duration_s", "at_s", "trials", "lost", "mean_blocked_s",
        "ci95_blocked_s", "min_blocked_s", "max_blocked_s", "trials_planned",
        "trials_stored", "trials_excluded", "per_trial",
    ])  # fmt: skip
    first, second = obj["per_trial"][:2]
    assert first == {"trial": 0, "lost": 4_000, "blocked_s": 0.2, "change_s": None,
                     "loss_location": {"sut_forward": 4_000}, "excluded": None,
                     "sut_counters": {"datapath/pipeline_drops": 4_000}}  # fmt: skip
    assert "sut_counters" not in second  # none counted: no key, as before
    assert cell == {"verdict": None, "mean_blocked_s": s.mean_blocked_s, "lost": 7_000}
