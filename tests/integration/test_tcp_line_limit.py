"""The delay line's limit with every TCP run: stored in ``tcp_runs`` (version 2 of the
method's table), read from a store made before it (the golden store's tcp cell, measured
with version 1), added to such a store when a cell is next written to it or copied into
it, and shown beside the cell by ``assess`` (text and JSON) and ``report``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.builders import store_with

from netassay.analysis.tcp import offered_pps, over_line_limit
from netassay.methods.tcp import store
from netassay.store import Store

NEW = ("offered_pps", "line_limit_pps", "line_limit_l1_bps", "line_limit_from")
LIMIT = {"pps": 20_000.0, "l1_bps": 20_000 * 1538 * 8.0,
         "from": "/var/lib/netassay/delayline.json, measured 2026-11-26T05:38:09Z on kernel "
                 "6.18.44, 2 CPUs, at 20 ms"}  # fmt: skip


def _columns(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[1] for r in conn.execute("PRAGMA table_info(tcp_runs)")}
    finally:
        conn.close()


def _versions(db: Path) -> set[int]:
    conn = sqlite3.connect(db)
    try:
        q = "SELECT version FROM method_tables WHERE owner = 'tcp'"
        return {r[0] for r in conn.execute(q)}
    finally:
        conn.close()


def _runs_like_golden(db: Path, throughputs: list[float]) -> list[dict[str, Any]]:
    """Runs as a cell over the line stores them: the golden cell's measured run, each at
    one of ``throughputs``, judged against LIMIT as ``methods.tcp.run.transfer`` does."""
    with Store(db, readonly=True) as st:
        exp = next(st.experiments(kinds=("tcp",)))
        base = store.stored_runs(st, exp.id)[0]
    runs = []
    for i, tput in enumerate(throughputs):
        offered = offered_pps(tput, base["mss_bytes"])
        fault = over_line_limit(offered, LIMIT)
        runs.append({
            **{k: v for k, v in base.items() if k not in ("id", "experiment_id", "utc")},
            "index": i, "throughput_bps": tput, "ok": fault is None, "fault": fault,
            "offered_pps": offered, "line_limit_pps": LIMIT["pps"],
            "line_limit_l1_bps": LIMIT["l1_bps"], "line_limit_from": LIMIT["from"],
        })  # fmt: skip
    return runs


def _cell(db: Path, runs: list[dict[str, Any]]) -> int:
    with Store(db, readonly=True) as st:
        config = {**next(st.experiments(kinds=("tcp",))).config, "line_limit": LIMIT}
    with Store(db) as st:
        exp_id = store.start(st, "tcp-limit", "tcp under a limit", config, {})
        for r in runs:
            store.record(st, exp_id, r)
    return exp_id


@pytest.mark.slow
def test_a_store_made_before_the_limit_reads_and_gains_it_when_written(tmp_path, cli):
    db = store_with(tmp_path / "old.db", "tcp")
    assert not set(NEW) & _columns(db)  # the golden cell's table is version 1
    text = cli("assess", db, check=True).stdout
    assert "line limit: not known (stored before netassay kept it with each run)" in text
    (old,) = [json.loads(x) for x in cli("assess", db, "--json", check=True).stdout.splitlines()]
    assert old["used"] == 2 and not old["faults"]

    runs = _runs_like_golden(db, [150e6, 300e6])  # 12.9 kpps: under; 25.9 kpps: over
    _cell(db, runs)
    assert set(NEW) <= _columns(db) and _versions(db) == {1, 2}
    with Store(db, readonly=True) as st:
        cells = list(store.stored_cells(st))
    before, now = cells
    assert all(r.get("line_limit_pps") is None for r in before.runs)  # old rows: no limit
    assert [r["line_limit_pps"] for r in now.runs] == [20_000.0, 20_000.0]
    assert now.runs[0]["offered_pps"] == runs[0]["offered_pps"]
    assert [r["ok"] for r in now.runs] == [True, False]
    assert now.summary.used == 1 and now.summary.throughput_bps == 150e6
    with Store(db) as st:  # applied once: a second writer adds nothing
        store.ensure(st)
    assert _versions(db) == {1, 2}


@pytest.mark.slow
def test_the_view_and_the_report_show_the_limit_beside_the_cell(tmp_path, cli):
    db = store_with(tmp_path / "t.db", "tcp")
    _cell(db, _runs_like_golden(db, [150e6, 300e6]))
    text = cli("assess", db, check=True).stdout
    assert ("line limit: 20.0 kpps (246 Mbit/s at L1 in 1514-byte frames; "
            "/var/lib/netassay/delayline.json, measured 2026-11-26T05:38:09Z") in text  # fmt: skip
    assert "the runs offered it up to 25.9 kpps" in text
    assert "runs: 1: 150 Mbit/s  2: 300 Mbit/s FAULT" in text
    assert "fault: run 1: the run offered the delay line 25.9 kpps, at or over its limit of " \
        "20.0 kpps (246 Mbit/s at L1" in text  # fmt: skip
    cells = [json.loads(x) for x in cli("assess", db, "--json", check=True).stdout.splitlines()]
    new = cells[-1]
    assert new["config"]["line_limit"]["pps"] == 20_000
    assert [r["line_limit_pps"] for r in new["run_details"]] == [20_000, 20_000]
    assert new["used"] == 1 and len(new["faults"]) == 1
    out = tmp_path / "r"
    cli("report", db, "--out", out, check=True)
    html = (out / "index.html").read_text()
    assert "line limit: 20.0 kpps" in html and "line limit: not known" in html
    pq = tmp_path / "pq"
    cli("export", "--db", db, "--format", "parquet", "--out", pq, check=True)
    import pyarrow.parquet as pq_

    t = pq_.read_table(pq / "tcp_runs.parquet")
    assert t.column("line_limit_pps").to_pylist() == [None, None, 20_000.0, 20_000.0]
    assert str(t.schema.field("line_limit_pps").type) == "double"


def test_a_cell_copied_into_an_older_store_brings_its_columns(tmp_path):
    new = store_with(tmp_path / "new.db", "tcp")
    _cell(new, _runs_like_golden(new, [150e6]))
    old = store_with(tmp_path / "old.db", "tcp")  # version 1 of the table
    with Store(new, readonly=True) as src, Store(old) as dst:
        exp = next(e for e in src.experiments(kinds=("tcp",)) if e.key == "tcp-limit")
        dst.import_rows(src.experiment_rows(exp.id), exp.key, exp.label, exp.metadata)
    assert set(NEW) <= _columns(old)
    with Store(old, readonly=True) as st:
        runs = [r for c in store.stored_cells(st) for r in c.runs]
    assert [r.get("line_limit_pps") for r in runs] == [None, None, 20_000.0]
    # a store whose table came whole from a version-2 store (no record of it) migrates
    fresh = tmp_path / "fresh.db"
    with Store(new, readonly=True) as src, Store(fresh) as dst:
        exp = next(e for e in src.experiments(kinds=("tcp",)) if e.key == "tcp-limit")
        dst.import_rows(src.experiment_rows(exp.id), exp.key, exp.label, exp.metadata)
        store.ensure(dst)
    assert _versions(fresh) == {1, 2} and set(NEW) <= _columns(fresh)
