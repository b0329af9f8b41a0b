"""A store written by schema 1 is migrated to schema 2: every trial's exclusion follows
its warnings (one rule, written into the ``excluded`` column), nothing else changes, and
trials stay append-only."""

import json
import sqlite3

import pytest

from netassay.config import AnalysisConfig
from netassay.shared.sweep_analyse import assess_store
from netassay.store import Store
from netassay.store.schema import SCHEMA_VERSION
from netassay.trial.record import TrialRecord

V1_TRIAL = (
    "INSERT INTO trials (experiment_id, load_index, repetition, rate_pps, duration_s, sent,"
    " received, warnings_json, source, utc, tool_version) VALUES (1,?,?,?,1,?,?,?,'t','u','0')"
)


def _v1_store(old_store, path):
    conn = old_store(path, {1})
    rows = [
        (0, 0, 1000, 1000, 1000, "[]"),
        (0, 1, 1000, 1000, 990, '["generator stall: a send was 12.0 ms late"]'),
        (1, 0, 2000, 2000, 1990, '["received 3 > sent 2: foreign packets"]'),
        (1, 1, 2000, 2000, 1000, '["counter fault: sink counter reset"]'),
    ]
    conn.executemany(V1_TRIAL, rows)
    conn.close()


def test_v1_store_migrates_with_exclusions(tmp_path, old_store):
    db = tmp_path / "v1.db"
    _v1_store(old_store, db)
    with Store(db) as st:
        assert st.schema_version() == SCHEMA_VERSION
        ex = [t["excluded"] for t in st.trials(1)]
        assert ex == [
            None,
            "generator stall: a send was 12.0 ms late",
            None,
            "counter fault: sink counter reset",
        ]
        assert {t["sink_dropped"] for t in st.trials(1)} == {0}
        assert st.integrity_problems() == []
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            st.conn.execute("UPDATE trials SET received = 0")
    with Store(db, readonly=True) as st:
        [a] = list(assess_store(st, AnalysisConfig()))
    assert a.table.k.tolist() == [1, 1] and a.excluded_trials == 2


def test_sink_drops_count_as_forwarded_and_faults_are_excluded(tmp_path):
    db = tmp_path / "s.db"
    with Store(db) as st:
        exp, _ = st.add_experiment(key="k", kind="sweep", source="t", label="q", config={})
        st.add_trials(
            exp,
            [
                TrialRecord(
                    0,
                    0,
                    1000,
                    1.0,
                    1000,
                    900,
                    "t",
                    sink_dropped=100,
                    warnings=["sink drops: 100 test frame(s) dropped at the sink"],
                ),
                TrialRecord(
                    0,
                    1,
                    1000,
                    1.0,
                    1000,
                    0,
                    "t",
                    warnings=["counter fault: the sink count is missing after the trial"],
                ),
            ],
        )
        assert st.integrity_problems() == []
    with Store(db, readonly=True) as st:
        [a] = list(assess_store(st, AnalysisConfig()))
    assert a.table.k.tolist() == [1] and a.table.plr.tolist() == [0.0]
    assert a.excluded_trials == 1


def test_v3_store_gains_acceptance_tables_and_keeps_its_experiments(tmp_path, old_store):
    from netassay.methods.accept.store import load_accept_tests, store_accept_test
    from netassay.trial.accept import AcceptRun, AcceptTest, CpuSample, Interval

    db = tmp_path / "v3.db"
    old_store(db, {1, 2, 3}).close()
    run = AcceptRun(
        index=1, tool="iperf3", tool_version="3.12", phase="sustained", offered_bps=4e8,
        datagram_bytes=1448, ip_version=4, duration_s=2.0, sent_packets=100,
        received_packets=99, lost_packets=1, intervals=[Interval(0, 1, 7240, 5, 0)],
        cpu=[CpuSample(1.0, {"cpu0": {"busy": 0.5}})], host={"receiver.udp_rcvbuf_errors": 1},
        raw="{}", started_utc="then",
    )  # fmt: skip
    with Store(db) as st:
        assert st.schema_version() == SCHEMA_VERSION
        assert [e.kind for e in st.experiments()] == ["sweep"]
        exp_id, new = store_accept_test(st, AcceptTest("t", "a", 4e8, "payload", [run], key="a"))
        assert new and store_accept_test(st, AcceptTest("t", "a", 4e8, "payload", [], key="a")) == (
            exp_id,
            False,
        )
        [back] = load_accept_tests(st, raw=True)
        assert back.runs == [run] and back.contract_bps == 4e8
        for table in ("accept_runs", "accept_intervals", "accept_cpu"):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                st.conn.execute(f"DELETE FROM {table}")
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                st.conn.execute(f"UPDATE {table} SET run_id = run_id" if table != "accept_runs"
                                else "UPDATE accept_runs SET tool = 'x'")  # fmt: skip
        assert st.integrity_problems() == []


V5_TRIAL = (
    "INSERT INTO trials (experiment_id, load_index, repetition, rate_pps, duration_s, sent,"
    " received, warnings_json, source, utc, tool_version, excluded)"
    " VALUES (1,?,?,100000,1,?,?,?,'t','u','0',NULL)"
)


def test_v5_store_names_and_excludes_the_imports_that_received_more_than_they_sent(
    tmp_path, old_store
):
    """A store that kept rx = 2 x tx as negative loss (PLR -0.5 at 100 kpps, marked PDR,
    verdict GOOD): migrated, that trial is a counter fault in its warnings and excluded,
    while 1 frame more than 100,000 sent (10 ppm: foreign frames) is used with no loss,
    as a fresh import would have it."""
    from netassay.quality import received_over_sent

    db = tmp_path / "v5.db"
    conn = old_store(db, {1, 2, 3, 4, 5})
    old = '["received exceeds sent by 100000 (foreign frames on the link?): negative loss kept"]'
    conn.executemany(
        V5_TRIAL,
        [
            (0, 0, 100_000, 100_000, "[]"),
            (0, 1, 100_000, 200_000, old),
            (0, 2, 100_000, 100_001, '["received exceeds sent by 1"]'),
        ],
    )
    conn.close()
    with Store(db) as st:
        assert st.schema_version() == SCHEMA_VERSION
        rows = st.trials(1)
        assert [t["excluded"] for t in rows] == [None, received_over_sent(100_000, 200_000), None]
        assert rows[1]["warnings"][-1] == received_over_sent(100_000, 200_000)
        assert st.integrity_problems() == []
    with Store(db, readonly=True) as st:
        [a] = list(assess_store(st, AnalysisConfig()))
    assert a.table.k.tolist() == [2] and a.excluded_trials == 1
    assert a.table.plr.tolist() == [0.0]  # never negative


def test_assess_of_a_file_with_rx_twice_tx_leaves_that_trial_out(tmp_path):
    """The case a user met, assessed from the file and from the store: the trial is
    named and left out, the load keeps its other trial, no PLR is negative."""
    from netassay.shared.sweep_analyse import iter_assessments
    from netassay.store.pastrami import import_files

    f = tmp_path / "lab_raw_2_exp_t_1_k6.1_intel_ns.txt"
    f.write_text(
        "[[100000, 0], [100000, 200000, 0], [100000, 100000, 0]]\n"
        "[[200000, 0], [200000, 199000, 0], [200000, 199500, 0]]\n"
        "[[300000, 0], [300000, 200000, 0], [300000, 210000, 0]]\n"
    )
    [a] = list(iter_assessments([f], AnalysisConfig()))
    assert a.table.k.tolist() == [1, 2, 2] and a.excluded_trials == 1
    assert (a.table.plr >= 0).all()
    assert "1 of 2 trials excluded: counter fault" in a.table.reason[0]
    db = tmp_path / "x.db"
    with Store(db) as st:
        import_files(st, [f])
    with Store(db, readonly=True) as st:
        [b] = list(assess_store(st, AnalysisConfig()))
        assert st.integrity_problems() == []
    assert b.table.plr.tolist() == a.table.plr.tolist() and b.excluded_trials == 1


def test_an_import_says_what_a_files_name_left_to_assume(tmp_path, cli):
    d = tmp_path / "in"
    d.mkdir()
    body = "[[1000, {}], [10000, 10000, 0], [10000, 10000, 0]]\n"  # each its own key
    (d / "lab_raw_50_exp_t_10_k6.1_intel_ns.txt").write_text(body.format(1))  # 2 runs, not 50
    (d / "plain.txt").write_text(body.format(2))  # no metadata at all
    (d / "good_raw_2_exp_t_10_k6.1_intel_ns.txt").write_text(body.format(3))
    db = tmp_path / "w.db"
    cp = cli("import", "pastrami", d, "--db", db)
    assert cp.returncode == 0, cp.stderr
    warned = cp.stderr.splitlines()
    assert len(warned) == 2, cp.stderr
    assert "raw_50" in warned[0] and "holds 2: the file's runs are used" in warned[0]
    assert "plain.txt: the name carries no metadata" in warned[1] and "10 s runs" in warned[1]
    out = cli("assess", db, "--json", check=True).stdout.splitlines()
    flags = {json.loads(x)["label"]: json.loads(x)["warnings"] for x in out}
    assert any(f.startswith("assumed: the name carries no metadata") for f in flags["plain"])
    assert not any(f.startswith("assumed") for f in flags["good_raw_2_exp_t_10_k6.1_intel_ns"])
