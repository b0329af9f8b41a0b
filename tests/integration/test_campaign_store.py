"""Store migration 4 (campaigns, per-core CPU use with every trial): an older store gains
them, its trials read with no CPU use, and a store that got a later migration first is
completed; CPU use written with a trial reads back as written."""

from __future__ import annotations

from netassay.store import Store
from netassay.store.schema import MIGRATIONS, SCHEMA_VERSION
from netassay.trial.record import TrialRecord


def _store_without_4(old_store, path):
    conn = old_store(path, {v for v, _, _ in MIGRATIONS if v != 4})
    conn.execute(
        "INSERT INTO trials (experiment_id, load_index, repetition, rate_pps, duration_s, sent,"
        " received, source, utc, tool_version) VALUES (1, 0, 0, 1000, 1, 1000, 990, 't', 'u', '0')"
    )
    conn.close()


def test_migration_4_completes_an_older_store(tmp_path, old_store):
    db = tmp_path / "old.db"
    _store_without_4(old_store, db)
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
