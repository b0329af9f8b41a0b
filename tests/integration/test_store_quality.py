"""Trials the generator shaped are kept in the store but left out of the statistics."""

import pytest

from netassay.config import AnalysisConfig
from netassay.shared.sweep_analyse import assess_store
from netassay.store import Store
from netassay.trial.record import TrialRecord


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


LIMIT = "generator limit: achieved 2.5 kpps of 3 kpps"
STALL = "generator stall: a send was 12.0 ms late"


def gap_store(db):
    """Plan 1..5 kpps, K = 3: load 2 all excluded, load 4 not measured yet (running)."""
    _sweep(
        db,
        [1000.0, 2000.0, 3000.0, 4000.0, 5000.0],
        [_trial(0, r, 1000, 1000, 1000) for r in range(3)]
        + [_trial(1, r, 2000, 2000, 2000) for r in range(2)]
        + [_trial(1, 2, 2000, 2000, 1000, [STALL])]
        + [_trial(2, r, 3000, 2500, 2500, [LIMIT]) for r in range(3)]
        + [_trial(3, r, 4000, 4000, 3600) for r in range(3)],
    )


def test_a_load_whose_trials_are_all_excluded_keeps_its_place(tmp_path):
    db = tmp_path / "g.db"
    gap_store(db)
    with Store(db, readonly=True) as st:
        cols = st.trial_arrays(1)
        [a] = list(assess_store(st, AnalysisConfig()))
    assert cols.loads.rate_pps.tolist() == [1000, 2000, 3000, 4000, 5000]
    assert cols.loads.excluded.tolist() == [0, 1, 3, 0, 0]
    t = a.table
    assert t.k.tolist() == [3, 2, 0, 3, 0]
    assert t.reason == (
        "",
        "1 of 3 trials excluded: generator stall",
        "all 3 trials excluded: generator limit",
        "",
        "not measured",
    )
    j = a.to_json()
    loads = j["loads"]
    assert [x["rate_pps"] for x in loads] == [1000, 2000, 3000, 4000, 5000]  # plan order
    assert loads[2]["k"] == 0 and loads[2]["excluded"] == 3 and loads[2]["plr"] is None
    assert loads[2]["reason"] == "all 3 trials excluded: generator limit"
    assert loads[4]["reason"] == "not measured" and loads[0]["reason"] is None
    # TIR 1 at 2 kpps ((2000 - 1000) / 1000); none across the gap
    assert loads[1]["tir"] == 1.0
    assert loads[2]["tir"] is None and loads[3]["tir"] is None and loads[4]["tir"] is None
    # PDR stops below 3 kpps (never measured) although 4 kpps is measured
    assert j["pdr_pps"] == 2000 and a.pdr.gap_rate_pps == 3000
    # past-PDR 4 kpps (PLR 0.1); the potential point 5 kpps is not measured yet
    assert j["past_pdr_index"] == 3 and j["verdict"] == "INCONCLUSIVE"
    assert "5 kpps" in j["reason"] and "not measured" in j["reason"]
    assert j["excluded_trials"] == 4


def test_assess_and_report_show_the_gaps(tmp_path, cli):
    db = tmp_path / "g.db"
    gap_store(db)
    out = cli("assess", db, check=True).stdout
    assert "GAP: all 3 trials excluded:" in out and "GAP: not measured" in out  # the table
    assert "1 of 3 trials excluded:" in out
    assert "stops below 3 kpps, not measured" in out
    cli("report", db, "--out", tmp_path / "rep", check=True)
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "not measured: all 3 trials excluded: generator limit" in html
    assert "no trial yet" in html and html.count('class="gap"') == 2
    assert (tmp_path / "rep" / "figures" / "gaps.png").stat().st_size > 10_000


def test_an_experiment_with_every_trial_excluded_is_assessed_not_hidden(tmp_path):
    db = tmp_path / "x.db"
    _sweep(db, [1000.0, 2000.0], [_trial(i, 0, 1000.0 * (i + 1), 10, 10, [LIMIT]) for i in (0, 1)])
    with Store(db, readonly=True) as st:
        [a] = list(assess_store(st, AnalysisConfig()))
    assert a.verdict == "INCONCLUSIVE" and a.saturation.reason.startswith("no load was measured")
    assert a.table.k.tolist() == [0, 0] and a.k_values == []


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
