"""The store's extension API: what a method writes and reads beyond experiments and
trials, without SQL of its own, and an experiment moved whole from one store to another.

- ``Writer`` (``Store.transaction()``): one transaction's writes: an experiment, its
  trials, and rows of the tables a method keeps (``row``); all or nothing.
- ``select``: the rows of one table that match, in a given order.
- ``ensure_tables``: a method's own tables, created once (a new method keeps its rows
  without a migration of the store's schema).
- ``experiment_rows`` / ``import_rows``: an experiment with every row that refers to it
  (through any chain of foreign keys: trials, runs, their method's rows) copied into
  another store under a new key, every id mapped (a campaign cell's scratch store into
  the campaign's store).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay import __version__
from netassay.errors import AlreadyStored
from netassay.store import faults
from netassay.trial.record import TrialRecord
from netassay.units import utc_now

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_NAME = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def dumps(obj: Any) -> str:
    """A JSON column's text: keys sorted, compact ('{}' and '[]' when empty)."""
    if not obj:
        return "[]" if isinstance(obj, list | tuple) else "{}"
    return _ENCODER.encode(obj)


def _ident(name: str) -> str:
    """A table or column name, checked (they are never user input, but never SQL)."""
    if not name or not set(name) <= _NAME:
        raise ValueError(f"not a table or column name: {name!r}")
    return name


INSERT_TRIAL = (
    "INSERT INTO trials (experiment_id, load_index, repetition, rate_pps, duration_s, sent,"
    " received, achieved_rate_pps, loss_location_json, counters_json, warnings_json, source,"
    " utc, tool_version, excluded, sink_dropped, run_id, cpu_json)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def trial_row(
    experiment_id: int, t: TrialRecord, now: str, run_ids: dict[int, int] | None = None
) -> tuple[Any, ...]:
    return (
        experiment_id,
        t.load_index,
        t.repetition,
        float(t.rate_pps),
        float(t.duration_s),
        int(t.sent),
        int(t.received),
        None if t.achieved_rate_pps is None else float(t.achieved_rate_pps),
        dumps(t.loss_location),
        dumps(t.counters),
        dumps(list(t.warnings)),
        t.source,
        t.utc or now,
        __version__,
        t.excluded,
        int(t.sink_dropped),
        run_ids.get(t.run_id) if run_ids and t.run_id is not None else t.run_id,
        dumps(t.cpu),
    )


def _rowid(cur: sqlite3.Cursor) -> int:
    """The rowid of the row an INSERT just wrote (sqlite3 says None before any INSERT)."""
    if cur.lastrowid is None:
        raise TypeError("no row was inserted")
    return cur.lastrowid


class Writer:
    """The writes of one transaction (``Store.transaction()``): all or nothing."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None = None) -> None:
        self.conn = conn
        self.path = path

    def experiment(
        self,
        *,
        key: str,
        kind: str,
        source: str,
        label: str,
        config: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> int:
        """A new experiment's id; ``AlreadyStored`` when its key is stored (another
        process stored it after this one looked: the write lock is held here, so the
        answer is final)."""
        found = self.conn.execute("SELECT id FROM experiments WHERE key = ?", (key,)).fetchone()
        if found is not None:
            raise AlreadyStored(str(self.path or "the store"), key, int(found[0]))
        cur = self.conn.execute(
            "INSERT INTO experiments (key, kind, source, label, created_utc, tool_version,"
            " config_json, metadata_json, environment_json) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                key, kind, source, label, utc_now(), __version__, dumps(config),
                dumps(metadata or {}), dumps(environment or {}),
            ),
        )  # fmt: skip
        return _rowid(cur)

    def config(self, experiment_id: int, config: dict[str, Any]) -> None:
        """Replace an experiment's config (a method that changed its plan mid-run: a
        search whose max load was lowered to the generator's reach)."""
        self.conn.execute(
            "UPDATE experiments SET config_json = ? WHERE id = ?", (dumps(config), experiment_id)
        )

    def trial(
        self, experiment_id: int, t: TrialRecord, run_ids: dict[int, int] | None = None
    ) -> int:
        cur = self.conn.execute(INSERT_TRIAL, trial_row(experiment_id, t, utc_now(), run_ids))
        return _rowid(cur)

    def run(self, experiment_id: int, started_utc: str, resumed: bool, env: dict[str, Any]) -> int:
        cur = self.conn.execute(
            "INSERT INTO runs (experiment_id, started_utc, resumed, environment_json)"
            " VALUES (?, ?, ?, ?)",
            (experiment_id, started_utc, int(resumed), dumps(env)),
        )
        return _rowid(cur)

    def row(self, table: str, values: dict[str, Any]) -> int:
        """One row of a method's table (JSON columns as text already); its rowid."""
        cols = [_ident(c) for c in values]
        marks = ", ".join("?" * len(cols))
        sql = f"INSERT INTO {_ident(table)} ({', '.join(cols)}) VALUES ({marks})"
        return _rowid(self.conn.execute(sql, tuple(values.values())))

    def rows(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        for values in rows:
            self.row(table, values)


class Transaction:
    """``with store.transaction() as w:`` — BEGIN IMMEDIATE (waiting for another
    writer, ``faults.waiting``), then COMMIT, or ROLLBACK on any error. An error of the
    store or its device comes out as what it means (``faults.cause``); a constraint a
    row met comes out as it is, for the caller to judge."""

    def __init__(
        self, conn: sqlite3.Connection, path: Path | None = None, *, mapped: bool = True
    ) -> None:
        self.conn = conn
        self.path = path or _path_of(conn)
        self.mapped = mapped  # False: SQLite's errors come out as they are

    def __enter__(self) -> Writer:
        try:
            faults.waiting(self.conn, self.path, lambda: self.conn.execute("BEGIN IMMEDIATE"))
        except sqlite3.DatabaseError as exc:
            if not self.mapped:
                raise
            raise faults.cause(exc, self.path) from exc
        return Writer(self.conn, self.path)

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
                return
            except sqlite3.DatabaseError as err:
                self._rollback()
                if not self.mapped:
                    raise
                raise faults.cause(err, self.path) from err
        self._rollback()
        if (
            self.mapped
            and isinstance(exc, sqlite3.DatabaseError)
            and not isinstance(exc, sqlite3.IntegrityError)
        ):
            raise faults.cause(exc, self.path) from exc

    def _rollback(self) -> None:
        """Undo what is left of the transaction (SQLite may have undone it already: a
        full disk does)."""
        if self.conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")


def _path_of(conn: sqlite3.Connection) -> Path:
    """The file of a connection's main database."""
    row = next((r for r in conn.execute("PRAGMA database_list") if r[1] == "main"), None)
    return Path(row[2]) if row and row[2] else Path("the store")


def select(
    conn: sqlite3.Connection,
    table: str,
    where: dict[str, Any],
    order_by: tuple[str, ...] = (),
    columns: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``table`` whose columns equal ``where``'s values (a list or tuple:
    any of them), ordered by ``order_by``; ``columns`` only (None: every column)."""
    conds: list[str] = []
    args: list[Any] = []
    for col, value in where.items():
        if isinstance(value, list | tuple):
            conds.append(f"{_ident(col)} IN ({', '.join('?' * len(value))})" if value else "0")
            args.extend(value)
        else:
            conds.append(f"{_ident(col)} = ?")
            args.append(value)
    what = ", ".join(_ident(c) for c in columns) if columns else "*"
    sql = f"SELECT {what} FROM {_ident(table)}"
    if conds:
        sql += " WHERE " + " AND ".join(conds)
    if order_by:
        sql += " ORDER BY " + ", ".join(_ident(c) for c in order_by)
    cur = conn.execute(sql, args)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur]


def ensure_tables(
    conn: sqlite3.Connection, owner: str, version: int, ddl: str, path: Path | None = None
) -> bool:
    """Create a method's own tables (``ddl``: CREATE TABLE statements) once per
    ``owner`` and ``version``, recorded in ``method_tables``; True when created now.
    Under the store's write lock, looked at again once it is held: two processes that
    both found the tables missing create them once."""
    if _recorded(conn, owner, version):
        return False
    with Transaction(conn, path):
        conn.execute(
            "CREATE TABLE IF NOT EXISTS method_tables (owner TEXT NOT NULL, version INTEGER NOT"
            " NULL, applied_utc TEXT NOT NULL, PRIMARY KEY (owner, version))"
        )
        if _recorded(conn, owner, version):  # another process made them meanwhile
            return False
        for stmt in split_sql(ddl):
            if not _has_column(conn, stmt):
                conn.execute(stmt)
        conn.execute("INSERT INTO method_tables VALUES (?, ?, ?)", (owner, version, utc_now()))
    return True


def _recorded(conn: sqlite3.Connection, owner: str, version: int) -> bool:
    q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'method_tables'"
    if conn.execute(q).fetchone() is None:
        return False
    q = "SELECT 1 FROM method_tables WHERE owner = ? AND version = ?"
    return conn.execute(q, (owner, version)).fetchone() is not None


_ADD_COLUMN = re.compile(r"\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)", re.I)


def _has_column(conn: sqlite3.Connection, stmt: str) -> bool:
    """Whether ``stmt`` adds a column the table has already (a table copied whole
    from a store of a later version, ``import_rows``, has its columns and no record)."""
    m = _ADD_COLUMN.match(stmt)
    if not m:
        return False
    return any(r[1] == m.group(2) for r in conn.execute(f"PRAGMA table_info({_ident(m.group(1))})"))


def split_sql(sql: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    out: list[str] = []
    buf = ""
    for stmt in sql.split(";"):
        buf += stmt + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    return out


# -- an experiment moved whole ------------------------------------------------------------
@dataclass(frozen=True)
class _Table:
    name: str
    columns: tuple[str, ...]
    own_id: str | None  # its INTEGER PRIMARY KEY that no foreign key names (new ids)
    refs: dict[str, str]  # column -> the table it refers to


def _tables(conn: sqlite3.Connection) -> dict[str, _Table]:
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    )]  # fmt: skip
    out = {}
    for name in names:
        info = list(conn.execute(f"PRAGMA table_info({_ident(name)})"))
        refs = {r[3]: r[2] for r in conn.execute(f"PRAGMA foreign_key_list({_ident(name)})")}
        pks = [r for r in info if r[5]]
        own = pks[0][1] if len(pks) == 1 and pks[0][2].upper() == "INTEGER" else None
        out[name] = _Table(name, tuple(r[1] for r in info), None if own in refs else own, refs)
    return out


def _order(tables: dict[str, _Table]) -> list[_Table]:
    """The tables that hang off ``experiments``, each after the tables it refers to."""
    placed = ["experiments"]
    todo = {n for n, t in tables.items() if t.refs} - {"experiments"}
    while True:
        ready = sorted(
            n for n in todo
            if set(tables[n].refs.values()) <= set(placed)
            and set(tables[n].refs.values()) & set(placed)
        )  # fmt: skip
        if not ready:
            return [tables[n] for n in placed[1:]]
        placed += ready
        todo -= set(ready)


@dataclass(frozen=True)
class ExperimentRows:
    """An experiment and every row that refers to it, as one store holds them."""

    experiment: dict[str, Any]
    rows: dict[str, list[dict[str, Any]]]  # table -> its rows (the source's ids)
    # a method's own table that holds rows of it -> its CREATE statement (``ensure_tables``
    # made it in the source; the target may not have it yet)
    tables: dict[str, str] = dataclasses.field(default_factory=dict)
    # those tables' columns and declared types in the source (a target that has a table
    # of an earlier version gains the columns it lacks)
    types: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


def experiment_rows(conn: sqlite3.Connection, experiment_id: int) -> ExperimentRows:
    """The experiment's row and, table by table, every row that refers to it."""
    tables = _tables(conn)
    exp = select(conn, "experiments", {"id": experiment_id})[0]
    ids: dict[str, list[Any]] = {"experiments": [experiment_id]}
    rows: dict[str, list[dict[str, Any]]] = {}
    for t in _order(tables):
        got: dict[Any, dict[str, Any]] = {}
        for col, parent in t.refs.items():
            if parent in ids:  # a row found through two keys (trials: experiment, run) once
                for r in select(conn, t.name, {col: ids[parent]}):
                    got[tuple(r.values())] = r
        rows[t.name] = list(got.values())
        key = t.own_id or next(iter(t.columns))
        ids[t.name] = [r[key] for r in rows[t.name]]
    held = [n for n, r in rows.items() if r]
    types = {n: {r[1]: r[2] for r in conn.execute(f"PRAGMA table_info({_ident(n)})")}
             for n in held}  # fmt: skip
    return ExperimentRows(exp, rows, _method_tables(conn, held), types)


def _method_tables(conn: sqlite3.Connection, names: list[str]) -> dict[str, str]:
    """The CREATE statements of the tables of ``names`` and of their indexes (a
    method's own tables, which ``ensure_tables`` made, may be missing in a target)."""
    out = {}
    for name in names:
        found = conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL"
            " AND type IN ('table', 'index') ORDER BY type = 'index'", (name,),
        ).fetchall()  # fmt: skip
        out[name] = ";\n".join(r[0] for r in found)
    return out


def import_rows(
    w: Writer, bundle: ExperimentRows, key: str, label: str, metadata: dict[str, Any]
) -> tuple[int, dict[str, int]]:
    """Write an experiment's rows (``experiment_rows`` of another store) under ``key``,
    ``label`` and ``metadata``, every id mapped to the new ones; rows per table."""
    e = bundle.experiment
    exp_id = w.experiment(
        key=key, kind=e["kind"], source=e["source"], label=label,
        config=json.loads(e["config_json"]), metadata=metadata,
        environment=json.loads(e["environment_json"]),
    )  # fmt: skip
    have = _tables(w.conn)
    for name, ddl in bundle.tables.items():  # a method's table the target does not have yet
        if name not in have:
            for stmt in split_sql(ddl):
                w.conn.execute(stmt)
        else:  # an earlier version of it: the columns it lacks added
            for col, decl in bundle.types.get(name, {}).items():
                if col not in have[name].columns:
                    w.conn.execute(f"ALTER TABLE {_ident(name)} ADD COLUMN {_ident(col)} {decl}")
    tables = _tables(w.conn)
    new_ids: dict[str, dict[Any, int]] = {"experiments": {e["id"]: exp_id}}
    counts = {}
    for t in _order(tables):
        new_ids[t.name] = {}
        for r in bundle.rows.get(t.name, []):
            values = {c: v for c, v in r.items() if c != t.own_id}
            for col, parent in t.refs.items():
                if values.get(col) is not None:
                    values[col] = new_ids[parent][values[col]]
            rid = w.row(t.name, values)
            if t.own_id:
                new_ids[t.name][r[t.own_id]] = rid
        counts[t.name] = len(bundle.rows.get(t.name, []))
    return exp_id, counts
