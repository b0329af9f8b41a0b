"""Export what a store holds: every kind of row, a file each, as CSV, JSON lines or
Parquet (``store/parquet.py``).

A kind of row (``Kind``) is one of:

- a table of the store as it is stored: ``experiments``, ``runs``, ``campaigns`` and
  every method's own table (``rtt_runs``, ``accept_runs``, ``accept_intervals``,
  ``accept_cpu``, ``tcp_runs``, ``batching_runs``, ``doctor_checks`` and what a method
  declares later through ``Store.ensure_tables``), found in the store itself and typed
  from its declarations and the values it holds. The store's bookkeeping
  (``schema_migrations``, ``method_tables``) is left out;
- ``trials``: every trial with its experiment's label and kind joined, whether it is
  left out of the statistics (``excluded``) and why, its loss split by place as columns
  (``lost_<place>``) and, where it kept one (``sweep --latency``), its one-way latency
  histogram's count and percentiles (``latency_*``);
- ``latency``: those histograms as a long table, a row per bucket;
- what a method derives from its own rows (``methods.exports``, each method's
  ``export.py``: a soak's seconds, the floods, an rtt run's segments and probes, an
  acceptance run's CPU per core), which the command line adds.

Each column has a type (``INT``, ``FLOAT``, ``BOOL``, ``TEXT``, ``TIME``, ``JSON``,
``BINARY``). CSV holds every column but JSON and binary ones, so that every row has the
same fields (booleans ``true``/``false``, null empty); JSON lines hold JSON columns as
objects and leave binary ones out; Parquet holds them all (JSON as text).

A folder export writes into ``FOLDER.part`` and renames it when complete, so nothing is
left of a failed or interrupted export, and reads the store in one transaction.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TextIO

from netassay.counters.loss import ALL_LOCATIONS
from netassay.errors import InputError, UsageError
from netassay.hist import SinkHist
from netassay.store.db import Store
from netassay.store.hdr import export_hdr

FORMATS = ("csv", "jsonl")  # text formats: a file, or a folder of files
INT, FLOAT, BOOL, TEXT, TIME, JSON, BINARY = (
    "int", "float", "bool", "text", "time", "json", "binary"
)  # fmt: skip
BOOKKEEPING = ("schema_migrations", "method_tables")
BATCH = 10_000  # rows per batch: a store of a million trials is never all in memory
TRIALS = "trials"
LATENCY = "latency"
LATENCY_STATS: tuple[Literal["p50_ns", "p90_ns", "p99_ns", "p999_ns"], ...] = (
    "p50_ns", "p90_ns", "p99_ns", "p999_ns",
)  # fmt: skip
JSON_NOTE = "JSON text: json.loads in Python, pl.col(name).str.json_decode() in polars"
TIME_NOTE = "UTC, microseconds (ISO 8601 text in the store)"
# what a column holds, where its name does not say it (a method's own tables say it in a
# '--' comment after the column in their CREATE TABLE)
NOTES = {
    "experiments.config_json": "the experiment's configuration: its method's request, "
    "the loads, the testbed and its knobs (an import: what the file said)",
    "experiments.metadata_json": "factor values and provenance: the file or campaign "
    "cell it came from, PASTRAMI's class, kernel, environment, pinning, ring",
    "experiments.environment_json": "the host when the experiment started: kernel, CPU, "
    "cmdline, sysctls, IRQ affinity, RPS/XPS masks, qdiscs, offloads, tool versions",
    "runs.environment_json": "the host when this run (a start or a resume) began",
    "runs.resumed": "1 when the run resumed the experiment, 0 when it started it",
    "trials.trial_id": "the trial's id: what rtt_runs.trial_id, batching_runs.trial_id "
    "and every per-trial kind refer to",
    "trials.plr": "the SUT's loss ratio: 1 - (received + sink_dropped) / sent",
    "trials.excluded": "true: a measurement fault, left out of the statistics",
    "trials.excluded_reason": "the fault that left the trial out (null: it is used)",
    "trials.loss_location": "packets lost per place (the lost_* columns, as JSON)",
    "trials.cpu": "CPU use per core over the trial: shares of user, system, irq, "
    "softirq, steal, idle",
    "trials.warnings": "the trial's measurement-quality warnings (a list of text)",
    "trials.counters": "the kernel counters before and after the trial and their "
    "deltas, and a method's own figures (a soak's seconds under 'soak', a flood's "
    "under 'flood', the rtt prober's under 'prober', a latency histogram under "
    "'latency')",
    "trials.latency_frames": "frames in the trial's one-way latency histogram (sweep "
    "--latency; null: none kept)",
    "campaigns.spec_json": "the campaign file as resolved",
    "rtt_runs.summary_json": "the rtt run's figures: per segment percentiles, probes "
    "sent, received, lost and late, CPU use per core, the background load",
    "rtt_runs.histograms": "binary: the segments' histograms as netassay packs them "
    "(netassay.methods.rtt.store.unpack_hists; their figures are rtt_segments)",
    "rtt_runs.probes": "binary: a sample of raw probes, zlib-compressed "
    "(netassay.methods.rtt.store.unpack_probes; unpacked: rtt_probes)",
    "accept_runs.host_json": "the test host's counters over the run (UDP datagrams, "
    "softnet processed per CPU)",
    "accept_runs.extra_json": "the run's other fields: CPU roles, the host's "
    "configuration, jitter, start time, warnings",
    "accept_runs.raw": "the tool's own output, as it printed it",
    "accept_cpu.cores_json": "CPU use per core at this sample: busy and idle shares",
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # INT, FLOAT, BOOL, TEXT, TIME, JSON (JSON text), BINARY
    note: str | None = None  # what it holds, where its name does not say it


Rows = Iterator[list[tuple[Any, ...]]]  # batches of rows, each value in its column's order


@dataclass(frozen=True)
class Kind:
    """One kind of row: its name (the file's, and ``--kind``'s), a row per what, and
    ``open()``: its columns and its rows in batches, read when it is written."""

    name: str
    what: str
    open: Callable[[], tuple[tuple[Column, ...], Rows]]


def per_experiment(
    store: Store, kinds: tuple[str, ...], rows: Callable[[Any], Iterable[tuple[Any, ...]]]
) -> Rows:
    """Batches of ``rows(experiment)`` over a store's experiments of ``kinds`` (a
    method's export, one experiment in memory at a time)."""
    batch: list[tuple[Any, ...]] = []
    for exp in list(store.experiments(kinds=kinds)):
        for r in rows(exp):
            batch.append(r)
            if len(batch) >= BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


# -- the kinds a store holds -------------------------------------------------------------
def kinds(store: Store) -> list[Kind]:
    """The store's own kinds of row: its tables (trials flattened), then the latency
    histograms; a method's own derived kinds come after (``methods.exports``)."""
    conn = store.conn
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )  # in the order they were made
        if name not in BOOKKEEPING
    ]
    out = []
    for table in sorted(tables, key=lambda t: (t != "experiments", t != TRIALS)):
        if table == TRIALS:
            out.append(Kind(TRIALS, "trial", lambda: _trials(conn)))
        else:
            out.append(Kind(table, f"row of the table {table}", _opener(conn, table)))
    if TRIALS in tables:
        out.append(Kind(LATENCY, "bucket of a trial's latency histogram", lambda: _hists(conn)))
    return out


def pick(available: list[Kind], name: str | None) -> list[Kind]:
    """Every kind, or the one named (a usage error naming those there are)."""
    names = [k.name for k in available]
    if len(set(names)) != len(names):  # a method's kind named as a table: a bug here
        raise AssertionError(f"kinds named twice: {names}")
    if name is None:
        return available
    for k in available:
        if k.name == name:
            return [k]
    raise UsageError(
        f"no kind of row '{name}'", f"this store's: {', '.join(names)}", "pick one with --kind"
    )


def _opener(conn: sqlite3.Connection, table: str) -> Callable[[], tuple[tuple[Column, ...], Rows]]:
    return lambda: _table(conn, table)


def _table(conn: sqlite3.Connection, table: str) -> tuple[tuple[Column, ...], Rows]:
    """A table's typed columns and its rows, in the order of its key."""
    info = list(conn.execute(f"PRAGMA table_info({_q(table)})"))
    comments = _comments(conn, table)
    cols = tuple(
        _column(table, r[1], column_type(conn, table, r[1], (r[2] or "").upper()),
                comments.get(r[1]))
        for r in info
    )  # fmt: skip
    key = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
    order = ", ".join(_q(c) for c in key) if key else "rowid"
    cur = conn.execute(
        f"SELECT {', '.join(_q(c.name) for c in cols)} FROM {_q(table)} ORDER BY {order}"
    )
    return cols, iter(lambda: cur.fetchmany(BATCH), [])


def _column(table: str, name: str, t: str, comment: str | None = None) -> Column:
    note = NOTES.get(f"{table}.{name}") or comment
    if note is None and t == JSON:
        note = "JSON text"
    if note is None and t == BINARY:
        note = "binary, as the store holds it"
    if note is None and t == TIME:
        note = TIME_NOTE
    return Column(name, t, note)


# -- trials, flattened -------------------------------------------------------------------
# (column, where it comes from in SQL over trials t JOIN experiments e, or a type)
_TRIAL_HEAD = (
    ("experiment_id", "t.experiment_id"),
    ("experiment_label", "e.label"),
    ("experiment_kind", "e.kind"),
    ("trial_id", "t.id"),
    ("run_id", "t.run_id"),
    ("load_index", "t.load_index"),
    ("repetition", "t.repetition"),
    ("rate_pps", "t.rate_pps"),
    ("duration_s", "t.duration_s"),
    ("sent", "t.sent"),
    ("received", "t.received"),
    ("sink_dropped", "t.sink_dropped"),
    ("plr", "CASE WHEN t.sent THEN 1.0 - (t.received + t.sink_dropped) * 1.0 / t.sent END"),
    ("achieved_rate_pps", "t.achieved_rate_pps"),
    ("excluded", "t.excluded IS NOT NULL"),
    ("excluded_reason", "t.excluded"),
)
_TRIAL_TAIL = (
    ("source", "t.source"),
    ("utc", "t.utc"),
    ("tool_version", "t.tool_version"),
    ("loss_location", "t.loss_location_json"),
    ("cpu", "t.cpu_json"),
    ("warnings", "t.warnings_json"),
    ("counters", "t.counters_json"),
)
LATENCY_COLUMNS = (
    Column("latency_frames", INT, NOTES["trials.latency_frames"]),
    Column("latency_min_ns", INT),
    *(Column(f"latency_{s}", FLOAT) for s in LATENCY_STATS),
    Column("latency_max_ns", INT),
    Column("latency_mean_ns", FLOAT),
)
_SOURCE = {"e.label": ("experiments", "label"), "e.kind": ("experiments", "kind"),
           "t.id": ("trials", "id")}  # fmt: skip


def places(conn: sqlite3.Connection) -> list[str]:
    """The loss locations the store's trials name, in path order (others after, sorted)."""
    found = {
        k for (k,) in conn.execute(
            "SELECT DISTINCT j.key FROM trials t, json_each(t.loss_location_json) j"
        )
    }  # fmt: skip
    return [p for p in ALL_LOCATIONS if p in found] + sorted(found - set(ALL_LOCATIONS))


def cores(conn: sqlite3.Connection) -> list[str]:
    """The CPUs the store's trials name in their CPU use (cpu0, cpu1, ... in order)."""
    found = {
        k for (k,) in conn.execute("SELECT DISTINCT j.key FROM trials t, json_each(t.cpu_json) j")
    }  # fmt: skip
    return sorted(found, key=lambda c: (len(c), c))


def _path(*keys: str) -> str:
    """A JSON path to ``keys`` for json_extract (each key quoted)."""
    return "$" + "".join('."' + k.replace('"', '\\"') + '"' for k in keys)


def _trials(conn: sqlite3.Connection) -> tuple[tuple[Column, ...], Rows]:
    """Every trial, its experiment's label and kind joined, in experiment, load and
    repetition order; typed from the columns it comes from."""
    where, cpus = places(conn), cores(conn)
    cols = [_column(TRIALS, name, _trial_type(conn, name, sql))
            for name, sql in (*_TRIAL_HEAD, *_TRIAL_TAIL)]  # fmt: skip
    head = len(_TRIAL_HEAD)
    extra = [Column(f"lost_{p}", INT, f"packets lost at {p} (null: not a place the "
                    "trial's split names)") for p in where]  # fmt: skip
    extra += [Column(f"busy_{c}", FLOAT, f"the share of the trial {c} was busy (its "
                     "user, system, irq, softirq and steal)") for c in cpus]  # fmt: skip
    columns = (*cols[:head], *extra, *LATENCY_COLUMNS, *cols[head:])
    what = [sql for _, sql in _TRIAL_HEAD]
    what += ["json_extract(t.loss_location_json, ?)"] * len(where)
    what += ["json_extract(t.cpu_json, ?)"] * len(cpus)
    what += ["json_extract(t.counters_json, '$.latency')"]
    what += [sql for _, sql in _TRIAL_TAIL]
    cur = conn.execute(
        f"SELECT {', '.join(what)} FROM trials t JOIN experiments e ON e.id = t.experiment_id"
        " ORDER BY t.experiment_id, t.load_index, t.repetition",
        [*(_path(p) for p in where), *(_path(c, "busy") for c in cpus)],
    )
    cut = head + len(extra)

    def rows() -> Rows:
        for batch in iter(lambda: cur.fetchmany(BATCH), []):
            yield [(*r[:cut], *latency_figures(r[cut]), *r[cut + 1 :]) for r in batch]

    return columns, rows()


def _trial_type(conn: sqlite3.Connection, name: str, sql: str) -> str:
    if name == "plr":
        return FLOAT
    if name == "excluded":
        return BOOL
    if name in ("loss_location", "cpu", "warnings", "counters"):
        return JSON
    table, col = _SOURCE.get(sql, ("trials", sql.removeprefix("t.")))
    decl = {r[1]: (r[2] or "").upper() for r in conn.execute(f"PRAGMA table_info({table})")}
    return column_type(conn, table, col, decl[col])


def latency_figures(doc: str | None) -> tuple[Any, ...]:
    """A trial's latency histogram (its counters' JSON text) as LATENCY_COLUMNS' values:
    frames, min, p50, p90, p99, p99.9, max, mean (ns); nulls when it kept none."""
    if doc is None:
        return (None,) * len(LATENCY_COLUMNS)
    s = SinkHist(json.loads(doc)).summary()
    if not s["n"]:
        return (0,) + (None,) * (len(LATENCY_COLUMNS) - 1)
    return (s["n"], s["min_ns"], *(s[k] for k in LATENCY_STATS), s["max_ns"], s["mean_ns"])


# -- latency histograms, long ------------------------------------------------------------
HIST_COLUMNS = (
    Column("experiment_id", INT),
    Column("trial_id", INT, "the trial (trials.trial_id)"),
    Column("load_index", INT),
    Column("repetition", INT),
    Column("direction", TEXT, "forward; with --bidirectional, forward or reverse (the "
           "trial's latency_* columns are both merged)"),
    Column("lower_ns", INT, "the bucket's lowest one-way latency"),
    Column("upper_ns", INT, "the bucket's end (exclusive; null: the last bucket, open)"),
    Column("count", INT, "frames in the bucket"),
)  # fmt: skip


def _hists(conn: sqlite3.Connection) -> tuple[tuple[Column, ...], Rows]:
    """Every stored latency histogram, a row per bucket: a trial's own (forward), or a
    --bidirectional trial's each direction's."""
    cur = conn.execute(
        "SELECT t.experiment_id, t.id, t.load_index, t.repetition,"
        " json_extract(t.counters_json, '$.latency'),"
        " json_extract(t.counters_json, '$.bidirectional.forward.latency'),"
        " json_extract(t.counters_json, '$.bidirectional.reverse.latency')"
        " FROM trials t WHERE json_extract(t.counters_json, '$.latency') IS NOT NULL"
        " ORDER BY t.experiment_id, t.load_index, t.repetition"
    )

    def rows() -> Rows:
        for batch in iter(lambda: cur.fetchmany(BATCH // 100), []):
            out = []
            for exp, trial, i, rep, merged, fwd, rev in batch:
                each = {"forward": fwd, "reverse": rev} if fwd or rev else {"forward": merged}
                for direction, doc in each.items():
                    for lo, hi, n in json.loads(doc or "{}").get("buckets", []):
                        out.append((exp, trial, i, rep, direction, lo, hi, n))
            if out:
                yield out

    return HIST_COLUMNS, rows()


# -- types -------------------------------------------------------------------------------
def column_type(conn: sqlite3.Connection, table: str, col: str, decl: str) -> str:
    """A column's type: what its values are, else what it is declared as."""
    if col.endswith("_json"):
        return JSON
    q, t = _q(col), _q(table)
    held = {r[0] for r in conn.execute(f"SELECT DISTINCT typeof({q}) FROM {t}")} - {"null"}
    if not held:
        return _declared(col, decl)
    if held == {"integer"}:
        not_bool = f"SELECT 1 FROM {t} WHERE {q} NOT IN (0, 1) LIMIT 1"
        if "BOOL" in decl and conn.execute(not_bool).fetchone() is None:
            return BOOL
        return INT
    if held <= {"integer", "real"}:
        return FLOAT
    if held == {"text"}:
        return TIME if _times(conn, table, col) else TEXT
    return BINARY if held == {"blob"} else TEXT


def _declared(col: str, decl: str) -> str:
    """The type of a column without values, from its declaration (SQLite's affinity)."""
    if "BOOL" in decl:
        return BOOL
    if "INT" in decl:
        return INT
    if any(k in decl for k in ("CHAR", "CLOB", "TEXT")):
        return TIME if is_time_name(col) else TEXT
    if any(k in decl for k in ("REAL", "FLOA", "DOUB")):
        return FLOAT
    return BINARY if "BLOB" in decl else TEXT


def is_time_name(col: str) -> bool:
    return col == "utc" or col.endswith("_utc")


def _times(conn: sqlite3.Connection, table: str, col: str) -> bool:
    """A time column whose every value is ISO 8601 text."""
    if not is_time_name(col):
        return False
    try:
        for (v,) in conn.execute(f"SELECT {_q(col)} FROM {_q(table)} WHERE {_q(col)} NOT NULL"):
            when(v)
    except ValueError:
        return False
    return True


def when(text: str) -> datetime:
    """ISO 8601 text as a UTC time (text without an offset is read as UTC)."""
    t = datetime.fromisoformat(text)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def as_text(v: Any) -> str:
    """A value of a column that holds several kinds, as text (bytes in hex)."""
    return v.hex() if isinstance(v, bytes) else str(v)


def _comments(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """column -> the ``--`` comment after it in the table's CREATE TABLE."""
    q = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?"
    sql = (conn.execute(q, (table,)).fetchone() or [""])[0] or ""
    found = re.findall(r'^\s*"?(\w+)"?\s[^\n]*?--\s*(.+?)\s*$', sql, re.MULTILINE)
    return dict(found)


def _q(name: str) -> str:
    """A table or column name quoted for SQL (a method's own tables name their own)."""
    return '"' + name.replace('"', '""') + '"'


# -- CSV and JSON lines ------------------------------------------------------------------
def write_text(kind: Kind, fmt: str, out: TextIO) -> int:
    """One kind's rows to ``out`` as CSV or JSON lines; how many were written."""
    cols, batches = kind.open()
    n = 0
    if fmt == "csv":
        keep = [i for i, c in enumerate(cols) if c.type not in (JSON, BINARY)]
        w = csv.writer(out)
        w.writerow([cols[i].name for i in keep])
        for batch in batches:
            w.writerows([_csv(r[i], cols[i].type) for i in keep] for r in batch)
            n += len(batch)
        return n
    keep = [i for i, c in enumerate(cols) if c.type != BINARY]
    names = [cols[i].name for i in keep]
    for batch in batches:
        for r in batch:
            line = {name: _json(r[i], cols[i].type) for name, i in zip(names, keep, strict=True)}
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
        n += len(batch)
    return n


def _csv(v: Any, t: str) -> Any:
    if v is None:
        return ""
    if t == BOOL:
        return "true" if v else "false"
    if t == TEXT and not isinstance(v, str):
        return as_text(v)
    return v


def _json(v: Any, t: str) -> Any:
    if v is None:
        return None
    if t == JSON:
        return json.loads(v) if isinstance(v, str) else v
    if t == BOOL:
        return bool(v)
    if t == TEXT and not isinstance(v, str):
        return as_text(v)
    return v


def write_file(kind: Kind, fmt: str, path: Path | None, stdout: TextIO) -> int:
    """One kind to ``path`` (written as ``path.part`` and renamed when complete), or to
    standard output; how many rows."""
    if path is not None and path.is_dir():
        raise InputError(
            f"--out {path} is a folder", f"a .{fmt} name writes one kind to a file",
            "name a file, or a folder without the suffix for a file per kind",
        )  # fmt: skip
    return write_to(path, stdout, lambda out: write_text(kind, fmt, out))


def write_hdr(store: Store, path: Path | None, stdout: TextIO) -> int:
    """Every trial's latency histogram in HdrHistogram's log format (``store.hdr``) to
    ``path`` or standard output; how many trials."""
    if path is not None and path.is_dir():
        raise InputError(
            f"--out {path} is a folder", "--format hdr writes one log file",
            "name a file (latency.hlog)",
        )  # fmt: skip
    return write_to(path, stdout, lambda out: export_hdr(store, out))


def write_to(path: Path | None, stdout: TextIO, write: Callable[[TextIO], int]) -> int:
    """``write`` to ``path`` (written as ``path.part`` and renamed when complete), or to
    standard output; what it returns."""
    if path is None:
        return write(stdout)
    tmp = path.with_name(path.name + ".part")
    try:
        fh = open(tmp, "w", newline="")  # noqa: SIM115 (closed below, the .part removed on error)
    except OSError as exc:
        where = "its folder does not exist" if not path.parent.is_dir() else exc.strerror
        raise InputError(
            f"cannot write {path}",
            where or str(exc),
            "give an --out path in a folder you may write to",
        ) from exc
    try:
        with fh:
            n = write(fh)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no half-written file left behind
        raise
    return n


# -- a folder of files, one per kind -----------------------------------------------------
Writer = Callable[[Kind, Path], int]  # writes one kind's file; how many rows


def text_writer(fmt: str) -> Writer:
    def write(kind: Kind, path: Path) -> int:
        with open(path, "w", newline="") as fh:
            return write_text(kind, fmt, fh)

    return write


def export_folder(store: Store, out: Path, chosen: list[Kind], suffix: str,
                  write: Writer) -> dict[str, int]:  # fmt: skip
    """Each kind of ``chosen`` that has rows as ``<name><suffix>`` in ``out``, a new or
    empty folder (written in ``out.part`` and published when complete: nothing is left
    of a failed or interrupted export), all read in one transaction; rows per kind."""
    out = Path(os.path.abspath(out))  # '.' and '..' by their names: the .part beside them
    tmp = _part(out)
    snapshot = not store.conn.in_transaction
    counts: dict[str, int] = {}
    try:  # from the folder's making on: an interrupt at any point removes what was made
        _make(tmp, out)
        if snapshot:  # every file from one state of the store, while a sweep writes to it
            store.conn.execute("BEGIN")
        for kind in chosen:
            path = tmp / f"{kind.name}{suffix}"
            n = write(kind, path)
            if n:
                counts[kind.name] = n
            else:
                path.unlink()  # a kind without rows has no file
        _publish(tmp, out)
    except InputError:  # the folder was not made
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
            "this export is a folder of files, one per kind of row",
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
