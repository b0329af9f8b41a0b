"""Export a store as Parquet: a folder of typed files that pandas, polars or any Parquet
reader opens without netassay.

The folder holds ``trials.parquet``, every trial with its experiment's fields joined
(the CSV's columns in the CSV's order, then the trial's ``trial_id``, ``run_id`` and raw
``counters``), and one ``<table>.parquet`` for each other table of the store that holds
rows: ``experiments``, ``runs``, ``campaigns`` and every method's own tables
(``rtt_runs``, ``accept_runs``, ``accept_intervals``, ``accept_cpu``, and what a method
declares through ``Store.ensure_tables``). The tables are found in the store itself and
typed from their declarations, so a new method's rows are exported with nothing added
here. The store's bookkeeping (``schema_migrations``, ``method_tables``) is left out.

Types: a column's declared SQLite type and the values it holds give INTEGER int64, REAL
float64, TEXT string, BLOB binary, BOOLEAN bool (0/1); a column named ``utc`` or
``*_utc`` is a timestamp (microseconds, UTC) when every value is ISO 8601 text; a column
that holds values of several kinds is text. JSON columns (``*_json``, and
``loss_location``, ``cpu``, ``warnings``, ``counters`` of ``trials.parquet``) are JSON
text: their keys differ from row to row and method to method, which nested Parquet types
would turn into wide, mostly null structs. Each file's schema metadata (key
``netassay``, JSON) says the netassay version, the store's schema version and what each
JSON, binary and timestamp column holds; the same words are each field's
``description``. A column's description comes from the table below, else from a ``--``
comment after the column in its CREATE TABLE (a method's own tables), else its kind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from netassay import __version__
from netassay.errors import InputError
from netassay.store.db import Store
from netassay.store.export import COLUMNS

FLAT = "trials"  # the trials, flattened: what the CSV holds, and the trial's own keys
FLAT_COLUMNS = (*COLUMNS, "trial_id", "run_id", "counters")
FLAT_JSON = ("loss_location", "cpu", "warnings", "counters")
# where a flattened column comes from: (table, column) of the store
FLAT_SOURCE = {
    "experiment_id": ("trials", "experiment_id"),
    "experiment_label": ("experiments", "label"),
    "experiment_kind": ("experiments", "kind"),
    "trial_id": ("trials", "id"),
    **{c: ("trials", f"{c}_json") for c in FLAT_JSON},
}
BOOKKEEPING = ("schema_migrations", "method_tables")
BATCH = 10_000  # rows per record batch: a store of a million trials is never all in memory
TIMESTAMP = pa.timestamp("us", tz="UTC")
KEY = b"netassay"
JSON_NOTE = "JSON text: json.loads in Python, pl.col(name).str.json_decode() in polars"
TIME_NOTE = "UTC, microseconds (ISO 8601 text in the store)"
DESCRIPTIONS = {
    "experiments.config_json": "the experiment's configuration: its method's request, "
    "the loads, the testbed and its knobs (an import: what the file said)",
    "experiments.metadata_json": "factor values and provenance: the file or campaign "
    "cell it came from, PASTRAMI's class, kernel, environment, pinning, ring",
    "experiments.environment_json": "the host when the experiment started: kernel, CPU, "
    "cmdline, sysctls, IRQ affinity, RPS/XPS masks, qdiscs, offloads, tool versions",
    "runs.environment_json": "the host when this run (a start or a resume) began",
    "runs.resumed": "1 when the run resumed the experiment, 0 when it started it",
    "trials.loss_location": "packets lost per place: unsent, generator egress, SUT "
    "ingress, forwarding, egress qdisc, sink, socket buffer",
    "trials.cpu": "CPU use per core over the trial: shares of user, system, irq, "
    "softirq, steal, idle",
    "trials.warnings": "the trial's measurement-quality warnings (a list of text)",
    "trials.counters": "the kernel counters before and after the trial and their "
    "deltas, and a method's own figures (a soak's seconds under 'soak', a flood's "
    "under 'flood', the rtt prober's under 'prober')",
    "trials.plr": "the SUT's loss ratio: 1 - (received + sink_dropped) / sent",
    "trials.excluded": "why the trial is left out of the statistics (null: it is used)",
    "trials.trial_id": "the trial's id: what rtt_runs.trial_id refers to",
    "campaigns.spec_json": "the campaign file as resolved",
    "rtt_runs.summary_json": "the rtt run's figures: per segment percentiles, probes "
    "sent, received, lost and late, CPU use per core, the background load",
    "rtt_runs.histograms": "binary: the segments' histograms as netassay packs them "
    "(netassay.methods.rtt.store.unpack_hists)",
    "rtt_runs.probes": "binary: a sample of raw probes, zlib-compressed "
    "(netassay.methods.rtt.store.unpack_probes)",
    "accept_runs.host_json": "the test host's counters over the run (UDP datagrams, "
    "softnet processed per CPU)",
    "accept_runs.extra_json": "the run's other fields: CPU roles, the host's "
    "configuration, jitter, start time, warnings",
    "accept_runs.raw": "the tool's own output, as it printed it",
    "accept_cpu.cores_json": "CPU use per core at this sample: busy and idle shares",
}


def export_parquet(store: Store, out: Path) -> dict[str, int]:
    """Write ``store`` as Parquet files into ``out``, a new or empty folder (written in
    ``out.part`` and published when complete: nothing is left of a failed or
    interrupted export); rows written per file, by table."""
    out = Path(os.path.abspath(out))  # '.' and '..' by their names: the .part beside them
    tmp = _part(out)
    snapshot = not store.conn.in_transaction
    try:  # from the folder's making on: an interrupt at any point removes what was made
        _make(tmp, out)
        if snapshot:  # every file from one state of the store, while a sweep writes to it
            store.conn.execute("BEGIN")
        counts = write_tables(store, tmp)
        _publish(tmp, out)
    except InputError:  # the folder was not made (write_tables raises none)
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if snapshot and store.conn.in_transaction:
            store.conn.execute("ROLLBACK")  # it read only
    return counts


def _part(out: Path) -> Path:
    """``out``'s ``.part`` folder; an ``out`` that is a file or holds files, or a
    ``.part`` left by an export that was stopped, is refused."""
    if out.exists() and not out.is_dir():
        raise InputError(
            f"--out {out} is a file",
            "a Parquet export is a folder of files, one per kind of row",
            "name a new or empty folder",
        )
    if out.is_dir() and any(out.iterdir()):
        raise InputError(
            f"--out {out} is a folder that is not empty",
            "the export would mix with what it holds",
            "name a new or empty folder",
        )
    tmp = out.with_name(out.name + ".part")
    if tmp.exists():
        raise InputError(
            f"{tmp} exists",
            "an export into it was stopped before it ended",
            "remove it, or name another --out",
        )
    return tmp


def _publish(tmp: Path, out: Path) -> None:
    """The complete ``.part`` folder renamed ``out``; into an empty ``out`` (perhaps a
    shell's working folder, which must stay the same folder) its files are moved, and
    removed again if one of them cannot be."""
    if not out.exists():
        tmp.replace(out)
        return
    moved: list[Path] = []
    try:
        for f in sorted(tmp.iterdir()):
            f.replace(out / f.name)
            moved.append(out / f.name)
        tmp.rmdir()
    except BaseException:
        for f in moved:
            f.unlink(missing_ok=True)
        raise


def _make(tmp: Path, out: Path) -> None:
    try:
        tmp.mkdir()
    except OSError as exc:
        where = "its folder does not exist" if not out.parent.is_dir() else exc.strerror
        raise InputError(
            f"cannot write {out}", where or str(exc), "give an --out in a folder you may write to"
        ) from exc


def write_tables(store: Store, folder: Path) -> dict[str, int]:
    """Every kind of row that ``store`` holds, one ``<table>.parquet`` each, in ``folder``."""
    conn, version = store.conn, store.schema_version()
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )  # in the order they were made
        if name not in BOOKKEEPING
    ]
    counts: dict[str, int] = {}
    for table in sorted(tables, key=lambda t: (t != "experiments", t != FLAT)):
        if conn.execute(f"SELECT 1 FROM {_q(table)} LIMIT 1").fetchone() is None:
            continue
        if table == FLAT:
            schema, batches = _flat(conn)
        else:
            schema, batches = _table(conn, table)
        meta = _metadata(table, schema, version)
        counts[table] = _write(folder / f"{table}.parquet", schema.with_metadata(meta), batches)
    return counts


def _table(conn: sqlite3.Connection, table: str) -> tuple[pa.Schema, Iterator[list[tuple]]]:
    """A table's typed schema and its rows in batches, in the order of its key."""
    info = list(conn.execute(f"PRAGMA table_info({_q(table)})"))
    types = {r[1]: _type(conn, table, r[1], (r[2] or "").upper()) for r in info}
    notes = _comments(conn, table)
    schema = pa.schema([_field(table, c, t, notes.get(c)) for c, t in types.items()])
    key = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
    order = ", ".join(_q(c) for c in key) if key else "rowid"
    cur = conn.execute(
        f"SELECT {', '.join(_q(c) for c in types)} FROM {_q(table)} ORDER BY {order}"
    )
    return schema, iter(lambda: cur.fetchmany(BATCH), [])


def _flat(conn: sqlite3.Connection) -> tuple[pa.Schema, Iterator[list[tuple]]]:
    """The flattened trials: the CSV's columns and rows in the CSV's order, then the
    trial's id, run and counters; typed from the columns they come from, the JSON text
    as the store holds it (compact, keys sorted)."""
    decl = {
        t: {r[1]: (r[2] or "").upper() for r in conn.execute(f"PRAGMA table_info({t})")}
        for t in ("trials", "experiments")
    }
    fields, what = [], []
    for c in FLAT_COLUMNS:
        table, col = FLAT_SOURCE.get(c, ("trials", c))
        if c == "plr":  # the SUT's loss ratio, as the CSV has it
            t = pa.float64()
            what.append(
                "CASE WHEN t.sent THEN 1.0 - (t.received + t.sink_dropped) * 1.0 / t.sent END"
            )
        else:
            t = _type(conn, table, col, decl[table][col])
            what.append(f"{table[0]}.{_q(col)}")
        fields.append(_field(FLAT, c, t, None))
    cur = conn.execute(
        f"SELECT {', '.join(what)} FROM trials t JOIN experiments e ON e.id = t.experiment_id"
        " ORDER BY t.experiment_id, t.load_index, t.repetition"
    )
    return pa.schema(fields), iter(lambda: cur.fetchmany(BATCH), [])


def _write(path: Path, schema: pa.Schema, batches: Iterator[list[tuple]]) -> int:
    n = 0
    with pq.ParquetWriter(path, schema) as w:
        for rows in batches:
            cols = zip(*rows, strict=True)
            arrays = [_array(list(c), f.type) for c, f in zip(cols, schema, strict=True)]
            w.write_batch(pa.record_batch(arrays, schema=schema))
            n += len(rows)
    return n


# -- types --------------------------------------------------------------------------------
def _type(conn: sqlite3.Connection, table: str, col: str, decl: str) -> pa.DataType:
    """A column's Parquet type: what its values are, else what it is declared as."""
    q, t = _q(col), _q(table)
    held = {r[0] for r in conn.execute(f"SELECT DISTINCT typeof({q}) FROM {t}")} - {"null"}
    if not held:
        return _declared(col, decl)
    if held == {"integer"}:
        not_bool = f"SELECT 1 FROM {t} WHERE {q} NOT IN (0, 1) LIMIT 1"
        if "BOOL" in decl and conn.execute(not_bool).fetchone() is None:
            return pa.bool_()
        return pa.int64()
    if held <= {"integer", "real"}:
        return pa.float64()
    if held == {"text"}:
        return TIMESTAMP if _times(conn, table, col) else pa.string()
    return pa.binary() if held == {"blob"} else pa.string()


def _declared(col: str, decl: str) -> pa.DataType:
    """The type of a column without values, from its declaration (SQLite's affinity)."""
    if "BOOL" in decl:
        return pa.bool_()
    if "INT" in decl:
        return pa.int64()
    if any(k in decl for k in ("CHAR", "CLOB", "TEXT")):
        return TIMESTAMP if _is_time_name(col) else pa.string()
    if any(k in decl for k in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return pa.binary() if "BLOB" in decl else pa.string()


def _is_time_name(col: str) -> bool:
    return col == "utc" or col.endswith("_utc")


def _times(conn: sqlite3.Connection, table: str, col: str) -> bool:
    """A time column whose every value is ISO 8601 text."""
    if not _is_time_name(col):
        return False
    try:
        for (v,) in conn.execute(f"SELECT {_q(col)} FROM {_q(table)} WHERE {_q(col)} NOT NULL"):
            _when(v)
    except ValueError:
        return False
    return True


def _when(text: str) -> datetime:
    """ISO 8601 text as a UTC time (text without an offset is read as UTC)."""
    t = datetime.fromisoformat(text)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _array(values: list[Any], t: pa.DataType) -> pa.Array:
    if t == TIMESTAMP:
        values = [None if v is None else _when(v) for v in values]
    elif t == pa.bool_():
        values = [None if v is None else bool(v) for v in values]
    elif t == pa.float64():
        values = [None if v is None else float(v) for v in values]
    elif t == pa.string():
        values = [v if v is None or isinstance(v, str) else _text(v) for v in values]
    return pa.array(values, type=t)


def _text(v: Any) -> str:
    return v.hex() if isinstance(v, bytes) else str(v)


# -- what the columns hold ----------------------------------------------------------------
def _field(table: str, col: str, t: pa.DataType, comment: str | None) -> pa.Field:
    note = DESCRIPTIONS.get(f"{table}.{col}") or comment
    if note is None and (col.endswith("_json") or (table == FLAT and col in FLAT_JSON)):
        note = "JSON text"
    if note is None and t == pa.binary():
        note = "binary, as the store holds it"
    if note is None and t == TIMESTAMP:
        note = TIME_NOTE
    return pa.field(col, t, metadata={"description": note} if note else None)


def _comments(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """column -> the ``--`` comment after it in the table's CREATE TABLE."""
    q = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?"
    sql = (conn.execute(q, (table,)).fetchone() or [""])[0] or ""
    found = re.findall(r'^\s*"?(\w+)"?\s[^\n]*?--\s*(.+?)\s*$', sql, re.MULTILINE)
    return dict(found)


def _metadata(table: str, schema: pa.Schema, version: int) -> dict[bytes, bytes]:
    columns = {
        f.name: f.metadata[b"description"].decode() for f in schema if f.metadata is not None
    }
    meta = {
        "netassay_version": __version__,
        "store_schema_version": version,
        "table": table,
        "json": JSON_NOTE,
        "timestamps": TIME_NOTE,
        "columns": columns,
    }
    return {KEY: json.dumps(meta, sort_keys=True).encode()}


def _q(name: str) -> str:
    """A table or column name quoted for SQL (a method's own tables name their own)."""
    return '"' + name.replace('"', '""') + '"'
