"""A store written by schema 1 is migrated to schema 2: every trial's exclusion follows
its warnings (one rule, written into the ``excluded`` column), nothing else changes, and
trials stay append-only."""

import sqlite3

import pytest

from netassay.config import AnalysisConfig
from netassay.report.loader import assess_store
from netassay.store import Store, TrialRecord
from netassay.store.schema import SCHEMA_VERSION

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
    from netassay.accept.model import AcceptRun, AcceptTest, CpuSample, Interval
    from netassay.accept.store import load_accept_tests, store_accept_test

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
