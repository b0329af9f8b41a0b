"""Store migration 4 (campaigns, per-core CPU use with every trial): an older store gains
them, its trials read with no CPU use, and a store that got a later migration first is
completed; CPU use written with a trial reads back as written."""

from __future__ import annotations

import sqlite3

from netassay.store import Store, TrialRecord
from netassay.store.db import _split_sql
from netassay.store.schema import MIGRATIONS, SCHEMA_VERSION


def _store_without_4(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("netassay_exclusion", 1, lambda _: None)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
        " description TEXT NOT NULL, applied_utc TEXT NOT NULL)"
    )
    for version, description, sql in MIGRATIONS:
        if version == 4:
            continue
        for stmt in _split_sql(sql):
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 'then')", (version, description))
    conn.execute(
        "INSERT INTO experiments VALUES (1, 'k', 'sweep', 't', 'l', 'u', '0', '{}', '{}', '{}')"
    )
    conn.execute(
        "INSERT INTO trials (experiment_id, load_index, repetition, rate_pps, duration_s, sent,"
        " received, source, utc, tool_version) VALUES (1, 0, 0, 1000, 1, 1000, 990, 't', 'u', '0')"
    )
    conn.close()


def test_migration_4_completes_an_older_store(tmp_path):
    db = tmp_path / "old.db"
    _store_without_4(db)
    with Store(db) as st:
        assert 4 in [m[0] for m in st.migrations()]
        assert st.schema_version() == SCHEMA_VERSION
        assert st.trials(1)[0]["cpu"] == {}
        assert st.campaigns() == []
        assert st.integrity_problems() == []


def test_cpu_use_is_stored_with_the_trial(tmp_path):
    cpu = {"cpu0": {"busy": 0.97, "steal": 0.01}, "cpu1": {"busy": 0.4, "steal": 0.0}}
    with Store(tmp_path / "c.db") as st:
        exp, _ = st.add_experiment(key="k", kind="sweep", source="t", label="l", config={})
        st.add_trial(exp, TrialRecord(0, 0, 1000.0, 1.0, 1000, 1000, "t", cpu=cpu))
        assert st.trials(exp)[0]["cpu"] == cpu
        cid = st.add_campaign("c", 5, {"name": "c"})
        assert st.campaign("c") == {**st.campaigns()[0], "id": cid, "seed": 5}
