"""Trials the generator shaped are kept in the store but left out of the statistics."""

import pytest

from netassay.config import AnalysisConfig
from netassay.report.loader import assess_store
from netassay.store import Store, TrialRecord


def _trial(load, rep, rate, sent, received, warnings=()):
    return TrialRecord(load, rep, rate, 1.0, sent, received, "test", warnings=list(warnings))


def test_generator_limited_trials_are_excluded_and_said(tmp_path):
    db = tmp_path / "q.db"
    with Store(db) as st:
        exp, _ = st.add_experiment(key="k", kind="sweep", source="t", label="q", config={})
        st.add_trials(
            exp,
            [
                _trial(0, 0, 1000, 1000, 1000),
                _trial(0, 1, 1000, 1000, 1000),
                _trial(0, 2, 1000, 800, 700, ["generator limit: achieved 800 pps of 1 kpps"]),
                _trial(1, 0, 2000, 2000, 1990, ["received exceeds sent by 0 (test)"]),
                _trial(1, 1, 2000, 2000, 1990),
                _trial(1, 2, 2000, 2000, 1990, ["generator stall: a send was 12.0 ms late"]),
            ],
        )
    with Store(db, readonly=True) as st:
        [a] = list(assess_store(st, AnalysisConfig()))
        assert st.count_trials() == 6  # nothing lost
    assert a.table.k.tolist() == [2, 2]
    assert a.table.plr.tolist() == pytest.approx([0.0, 0.005])
    assert a.excluded_trials == 2 and a.trial_warnings == 3
    assert any("2 trial(s) left out" in f for f in a.flags)
    assert any("1 trial(s) carry other" in f for f in a.flags)
    assert a.to_json()["excluded_trials"] == 2


def test_imported_rate_shortfall_is_a_generator_limit(tmp_path):
    from netassay.store.pastrami import parse_file

    f = tmp_path / "x_raw_2_exp_t_1_k6.1_intel_ns.txt"
    f.write_text("[[1000, 0], [1000, 1000, 0], [990, 990, 0]]\n")
    t = parse_file(f).trials
    assert not t[0].warnings
    assert t[1].warnings[0].startswith("generator limit: sent 990 of 1000 planned (-1.000%)")


def _sweep(db, rates, trials, label="gaps"):
    config = {"rates_pps": rates, "runs": 3, "duration_s": 1.0}
    with Store(db) as st:
        exp, _ = st.add_experiment(key=label, kind="sweep", source="t", label=label, config=config)
        st.add_trials(exp, trials)


def test_unsorted_loads_are_one_line_input_error(tmp_path, cli):
    db = tmp_path / "u.db"
    _sweep(
        db,
        [2000.0, 1000.0, 3000.0],
        [
            _trial(i, r, rate, 1000, 1000)
            for i, rate in enumerate((2000, 1000, 3000))
            for r in (0, 1)
        ],
        label="unsorted",
    )
    cp = cli("assess", db)
    assert cp.returncode == 3 and "Traceback" not in cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1
    assert "load 1 (1 kpps) is below load 0 (2 kpps)" in cp.stderr and "sort" in cp.stderr
