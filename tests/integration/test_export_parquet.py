"""``netassay export --format parquet``: every table of a real store (the golden store's
measured and imported experiments) read back with pyarrow and compared, row for row,
with what SQLite holds, and the trials flattened; a method's own table found without
being named; an empty store; the folders it refuses; nothing left of an export that
fails. (The kinds a method derives, and the text formats: test_export_kinds.py.)"""

from __future__ import annotations

import csv
import io
import json
import signal
import sqlite3
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.builders import GOLDEN_STORE, store_with
from tests.conftest import netassay_argv

from netassay import __version__
from netassay.hist import SinkHist
from netassay.methods import REGISTRY, exports, method
from netassay.store import export
from netassay.store.db import Store
from netassay.store.parquet import export_parquet
from netassay.store.schema import SCHEMA_VERSION
from netassay.trial.record import TrialRecord

CAMPAIGN_STORE = GOLDEN_STORE.with_name("campaign.db")
BOOKKEEPING = {"schema_migrations", "method_tables"}
TYPES = {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string(), "BLOB": pa.binary()}
TIMESTAMP = pa.timestamp("us", tz="UTC")
STORED = [name for name in REGISTRY if method(name).kinds]


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Table -> PRAGMA table_info rows, for every table of the store that holds rows."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            n: list(conn.execute(f"PRAGMA table_info({n})"))
            for n in names
            if n not in BOOKKEEPING and conn.execute(f"SELECT count(*) FROM {n}").fetchone()[0]
        }
    finally:
        conn.close()


def _sql(db: Path, query: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cur = conn.execute(query)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur]
    finally:
        conn.close()


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _csv(value: Any) -> str:
    return "" if value is None else str(value)


def _same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Equal row for row, value for value, and of the same Python type (1 is not 1.0)."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert list(g) == list(w)
        for c in w:
            assert g[c] == w[c], c
            assert w[c] is None or type(g[c]) is type(w[c]), (c, g[c], w[c])


def _export(db: Path, out: Path) -> dict[str, int]:
    with Store(db, readonly=True) as store:
        return export_parquet(store, out, [*export.kinds(store), *exports(store)])


DERIVED = {"latency", "rtt_segments", "rtt_probes", "floods", "soak_seconds", "accept_cpu_cores"}


def check_tables(db: Path, out: Path) -> set[str]:
    """Every table but trials: its file read back equals the table, typed as declared;
    the tables that have a file."""
    tables = _tables(db)
    for table, info in tables.items():
        if table == "trials":
            continue
        got = pq.read_table(out / f"{table}.parquet")
        key = ", ".join(r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]) or "rowid"
        want = _sql(db, f"SELECT * FROM {table} ORDER BY {key}")
        types = {f.name: f.type for f in got.schema}
        for r in info:  # what the golden store declares (a type it has not: unchecked)
            decl = r[2].upper()
            t = pa.bool_() if "BOOL" in decl else TYPES.get(decl)
            t = TIMESTAMP if r[1] == "utc" or r[1].endswith("_utc") else t
            assert t is None or types[r[1]] == t, (table, r[1])
        for row in want:
            for c, v in row.items():
                if v is not None and types[c] in (TIMESTAMP, pa.bool_()):
                    row[c] = _utc(v) if types[c] == TIMESTAMP else bool(v)
        _same(got.to_pylist(), want)
    assert {p.stem for p in out.iterdir()} - DERIVED == set(tables)
    return set(tables)


def expected_trials(db: Path) -> list[dict[str, Any]]:
    """The flattened trials as the store holds them, worked out here from SQL and JSON."""
    stored = _sql(
        db,
        "SELECT t.*, e.label, e.kind FROM trials t JOIN experiments e ON e.id = t.experiment_id"
        " ORDER BY t.experiment_id, t.load_index, t.repetition",
    )
    places = {k for t in stored for k in json.loads(t["loss_location_json"])}
    places_in_order = [p for p in export.ALL_LOCATIONS if p in places]
    places_in_order += sorted(places - set(export.ALL_LOCATIONS))
    cores = sorted(
        {k for t in stored for k in json.loads(t["cpu_json"])}, key=lambda c: (len(c), c)
    )
    want = []
    for t in stored:
        plr = 1.0 - (t["received"] + t["sink_dropped"]) / t["sent"] if t["sent"] else None
        loss, cpu = json.loads(t["loss_location_json"]), json.loads(t["cpu_json"])
        hist = json.loads(t["counters_json"]).get("latency")
        s = SinkHist(hist).summary() if hist is not None else {}
        want.append({
            "experiment_id": t["experiment_id"], "experiment_label": t["label"],
            "experiment_kind": t["kind"], "trial_id": t["id"], "run_id": t["run_id"],
            "load_index": t["load_index"], "repetition": t["repetition"],
            "rate_pps": t["rate_pps"], "duration_s": t["duration_s"], "sent": t["sent"],
            "received": t["received"], "sink_dropped": t["sink_dropped"], "plr": plr,
            "achieved_rate_pps": t["achieved_rate_pps"],
            "excluded": t["excluded"] is not None, "excluded_reason": t["excluded"],
            **{f"lost_{p}": loss.get(p) for p in places_in_order},
            **{f"busy_{c}": (cpu.get(c) or {}).get("busy") for c in cores},
            "latency_frames": s.get("n"), "latency_min_ns": s.get("min_ns"),
            "latency_p50_ns": s.get("p50_ns"), "latency_p90_ns": s.get("p90_ns"),
            "latency_p99_ns": s.get("p99_ns"), "latency_p999_ns": s.get("p999_ns"),
            "latency_max_ns": s.get("max_ns"), "latency_mean_ns": s.get("mean_ns"),
            "source": t["source"], "utc": _utc(t["utc"]), "tool_version": t["tool_version"],
            **{c: t[f"{c}_json"] for c in ("loss_location", "cpu", "warnings", "counters")},
        })  # fmt: skip
    return want


def check_trials(db: Path, out: Path) -> set[str]:
    """trials.parquet: every trial with its experiment's label and kind, typed, its loss
    by place, CPU use per core and latency percentiles as columns, its JSON text what the
    store holds; the CSV's rows, value for value; the kinds it holds."""
    got = pq.read_table(out / "trials.parquet")
    types = {f.name: f.type for f in got.schema}
    assert types["sent"] == pa.int64() and types["rate_pps"] == pa.float64()
    assert types["utc"] == TIMESTAMP and types["counters"] == pa.string()
    assert types["excluded"] == pa.bool_() and types["latency_p999_ns"] == pa.float64()
    rows = got.to_pylist()
    _same(rows, expected_trials(db))
    text = io.StringIO()
    with Store(db, readonly=True) as store:
        (trials,) = export.pick(export.kinds(store), "trials")
        export.write_text(trials, "csv", text)
    as_csv = list(csv.DictReader(io.StringIO(text.getvalue())))
    assert len(as_csv) == len(rows)
    for r, line in zip(rows, as_csv, strict=True):
        assert list(line) == [c for c in r if c not in ("loss_location", "cpu", "warnings",
                                                        "counters")]  # fmt: skip
        for c in line:
            if c == "utc":
                assert r[c] == _utc(line[c])
            elif c == "excluded":
                assert line[c] == ("true" if r[c] else "false")
            else:
                assert _csv(r[c]) == line[c], c
    return {r["experiment_kind"] for r in rows}


KINDS = [
    ("sweep", {"experiments", "trials", "runs", "latency"}),
    ("search", {"experiments", "trials", "runs"}),
    ("mrr", {"experiments", "trials", "runs", "floods"}),
    ("soak", {"experiments", "trials", "runs", "soak_seconds"}),
    ("rtt", {"experiments", "trials", "rtt_runs", "rtt_segments", "rtt_probes"}),
    (
        "accept",
        {"experiments", "accept_runs", "accept_intervals", "accept_cpu", "accept_cpu_cores"},
    ),
    ("pastrami-import", {"experiments", "trials"}),
]


@pytest.mark.parametrize(("kind", "files"), KINDS, ids=[k for k, _ in KINDS])
def test_each_kind_of_row_reads_back_equal_to_the_store(kind, files, tmp_path):
    db = store_with(tmp_path / "s.db", kind)
    counts = _export(db, tmp_path / "out")
    assert set(counts) == files
    assert files - DERIVED == check_tables(db, tmp_path / "out")
    if "trials" in files:
        assert check_trials(db, tmp_path / "out") == {kind}


@pytest.mark.parametrize("name", STORED)
def test_every_methods_rows_read_back_equal(name, tmp_path):
    """Through the registry: a method added later is held to the same, with nothing
    added here (its experiments in the golden store, its tables declared in the store)."""
    db = store_with(tmp_path / "s.db", *method(name).kinds)
    counts = _export(db, tmp_path / "out")
    assert set(counts) - DERIVED == check_tables(db, tmp_path / "out")
    if "trials" in counts:
        assert check_trials(db, tmp_path / "out") <= set(method(name).kinds)


@pytest.mark.parametrize("db", [GOLDEN_STORE, CAMPAIGN_STORE], ids=["store", "campaign"])
def test_a_whole_store_reads_back_equal(db, tmp_path, cli):
    out = tmp_path / "out"
    said = cli("export", "--db", db, "--format", "parquet", "--out", out, check=True).stdout
    tables = check_tables(db, out)
    check_trials(db, out)
    n = len(list(out.iterdir()))
    assert said.startswith(f"{out}: {n} Parquet file(s): experiments ")
    assert "campaigns" in tables or db == GOLDEN_STORE
    assert not out.with_name("out.part").exists()


def test_the_schema_says_what_the_columns_hold(tmp_path):
    _export(GOLDEN_STORE, tmp_path / "out")
    for f in (tmp_path / "out").iterdir():
        schema = pq.read_schema(f)
        meta = json.loads(schema.metadata[b"netassay"])
        assert meta["netassay_version"] == __version__
        assert meta["store_schema_version"] == SCHEMA_VERSION and meta["table"] == f.stem
        for field in schema:
            if field.name.endswith("_json") or field.type in (pa.binary(), TIMESTAMP):
                note = field.metadata[b"description"].decode()
                assert meta["columns"][field.name] == note, (f.stem, field.name)
    trials = json.loads(pq.read_schema(tmp_path / "out" / "trials.parquet").metadata[b"netassay"])
    assert {
        "loss_location",
        "cpu",
        "warnings",
        "counters",
        "plr",
        "excluded",
        "latency_frames",
    } <= set(trials["columns"])
    assert "soak" in trials["columns"]["counters"]


EXAMPLE = """
CREATE TABLE example_checks (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    ok BOOLEAN NOT NULL, -- whether the check passed
    value INTEGER,
    anything,
    checked_utc TEXT NOT NULL,
    detail_json TEXT NOT NULL -- what the check saw
);
CREATE TABLE example_empty (id INTEGER PRIMARY KEY, note TEXT);
"""


def test_a_methods_own_table_is_exported_typed_without_being_named(tmp_path):
    """A table a method declares through Store.ensure_tables (as a new method would)."""
    db = store_with(tmp_path / "s.db", "sweep")
    with Store(db) as store:
        assert store.ensure_tables("example", 1, EXAMPLE)
        exp = next(store.experiments()).id
        with store.transaction() as w:
            for ok, value, anything in ((True, 3, 1), (False, 2.5, "a"), (True, None, b"\x01")):
                w.row("example_checks", {
                    "experiment_id": exp, "ok": ok, "value": value, "anything": anything,
                    "checked_utc": "2026-11-25T21:00:00.000001+00:00", "detail_json": "{}",
                })  # fmt: skip
    _export(db, tmp_path / "out")
    got = pq.read_table(tmp_path / "out" / "example_checks.parquet")
    assert not (tmp_path / "out" / "example_empty.parquet").exists()
    assert not (tmp_path / "out" / "method_tables.parquet").exists()
    types = {f.name: f.type for f in got.schema}
    assert types == {
        "id": pa.int64(), "experiment_id": pa.int64(), "ok": pa.bool_(),
        "value": pa.float64(), "anything": pa.string(), "checked_utc": TIMESTAMP,
        "detail_json": pa.string(),
    }  # fmt: skip
    assert [r["ok"] for r in got.to_pylist()] == [True, False, True]
    assert got.column("value").to_pylist() == [3.0, 2.5, None]
    assert got.column("anything").to_pylist() == ["1", "a", "01"]
    assert got.schema.field("ok").metadata[b"description"] == b"whether the check passed"
    meta = json.loads(got.schema.metadata[b"netassay"])
    assert meta["columns"]["detail_json"] == "what the check saw"


def test_an_empty_store_exports_an_empty_folder(tmp_path, cli):
    db = tmp_path / "e.db"
    Store(db).close()
    out = tmp_path / "out"
    said = cli("export", "--db", db, "--format", "parquet", "--out", out, check=True).stdout
    assert said.strip() == f"{out}: 0 Parquet file(s): no rows"
    assert out.is_dir() and not list(out.iterdir())


@pytest.mark.slow
def test_the_folders_it_refuses_in_one_line(tmp_path, cli):
    file, full, part = tmp_path / "f.parquet", tmp_path / "full", tmp_path / "again.part"
    file.write_text("mine")
    full.mkdir()
    (full / "keep").write_text("mine")
    part.mkdir()
    cases = [
        ((), 2, "--format parquet needs --out"),
        (("--out", file), 3, "is a file"),
        (("--out", full), 3, "is a folder that is not empty"),
        (("--out", tmp_path / "no" / "out"), 3, "its folder does not exist"),
        (("--out", tmp_path / "again"), 3, "an export into it was stopped"),
    ]
    for args, code, why in cases:
        cp = cli("export", "--db", GOLDEN_STORE, "--format", "parquet", *args)
        assert cp.returncode == code and why in cp.stderr, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1 and "Traceback" not in cp.stderr
    assert file.read_text() == "mine" and [p.name for p in full.iterdir()] == ["keep"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.part", "f.parquet", "full"]
    empty = tmp_path / "empty"
    empty.mkdir()  # an empty folder is filled, and stays the same folder ('--out .' too)
    inode = empty.stat().st_ino
    cli("export", "--db", GOLDEN_STORE, "--format", "parquet", "--out", ".", check=True, cwd=empty)
    assert (empty / "trials.parquet").is_file() and empty.stat().st_ino == inode
    assert not (tmp_path / "empty.part").exists()


def test_nothing_is_left_of_an_export_that_fails(tmp_path, cli):
    """A trial whose text SQLite cannot decode (a damaged store) fails the export after
    the experiments' file is written: one line, and neither the folder nor its .part
    remains."""
    db = store_with(tmp_path / "s.db", "sweep")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO trials (experiment_id, load_index, repetition, rate_pps, duration_s,"
            " sent, received, source, utc, tool_version) SELECT id, 99, 0, 1.0, 1.0, 1, 1,"
            " CAST(X'FF' AS TEXT), '2026-11-25T21:00:00+00:00', 'x' FROM experiments"
        )
    conn.close()
    out = tmp_path / "out"
    cp = cli("export", "--db", db, "--format", "parquet", "--out", out)
    assert cp.returncode == 4 and "the store cannot be read" in cp.stderr, cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_nothing_is_left_of_an_interrupted_export(tmp_path, sig, code):
    """Ctrl-C (or SIGTERM) while the files are written: neither the folder nor its .part
    remains. The store is large enough (30,000 trials, about 0.5 s of writing here) for
    the signal to come while the .part folder is being filled."""
    db = tmp_path / "s.db"
    with Store(db) as st:
        exp, _ = st.add_experiment(key="k", kind="sweep", source="x", label="big", config={})
        st.add_trials(exp, [
            TrialRecord(i, r, 1e4, 1.0, 10_000, 9_990, "x", loss_location={"sut_backlog": 10})
            for i in range(20) for r in range(1500)
        ])  # fmt: skip
    out = tmp_path / "out"
    argv = netassay_argv("export", "--db", db, "--format", "parquet", "--out", out)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not out.with_name("out.part").exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert "interrupted" in err and "Traceback" not in err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.db"]
