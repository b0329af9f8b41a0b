"""The SQLite store: experiments and append-only trials, written as each trial ends."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from netassay import __version__
from netassay.errors import AlreadyStored, StoreDamaged, StoreError, StoreFull
from netassay.quality import exclusion_of_json
from netassay.store import faults
from netassay.store.check import (
    integrity_problems,
    refuse_if_damaged,
    row_counts,
    warn_if_damaged,
)
from netassay.store.loads import Loads, build_loads, planned_rates
from netassay.store.rows import (
    INSERT_TRIAL,
    ExperimentRows,
    Transaction,
    Writer,
    dumps,
    ensure_tables,
    experiment_rows,
    import_rows,
    select,
    split_sql,
    trial_row,
)
from netassay.store.schema import MIGRATIONS, SCHEMA_VERSION
from netassay.trial.record import TrialRecord
from netassay.units import utc_now


class StoredCampaign(TypedDict):
    """A campaign as ``Store.campaigns`` reads it (its spec parsed)."""

    id: int
    name: str
    created_utc: str
    tool_version: str
    seed: int
    spec: dict[str, Any]


class StoredRun(TypedDict):
    """A run of an experiment as ``Store.runs`` reads it (its environment parsed)."""

    id: int
    started_utc: str
    resumed: bool
    environment: dict[str, Any]


@dataclass(frozen=True)
class Experiment:
    """A curve: trials at a list of loads, K repetitions each, one configuration."""

    id: int
    key: str
    kind: str
    source: str
    label: str
    created_utc: str
    tool_version: str
    config: dict[str, Any]
    metadata: dict[str, Any]
    environment: dict[str, Any]


@dataclass(frozen=True)
class TrialArrays:
    """The usable trials of one experiment as columns, ordered by load then repetition,
    and every load index of the plan (measured or not) with its excluded trials."""

    load_index: np.ndarray
    rate_pps: np.ndarray
    sent: np.ndarray
    received: np.ndarray  # received + sink_dropped: what the SUT delivered
    warning_trials: int  # how many trials carry measurement warnings
    excluded_trials: int  # of which measurement faults: not in the arrays
    # per load index of the plan (config rates_pps) and of every stored trial: offered
    # load, trials excluded, and why ("not measured" when the load has no trial yet)
    loads: Loads = field(default_factory=lambda: build_loads([], [], []))


class Store:
    """A netassay results database (SQLite, WAL). Use as a context manager.

    A writer first checks the store (SQLite's ``quick_check``: 0.22 s per open of a store
    of 1M trials, 180 MB, ``bench/store.py``) and refuses a damaged one, so that nothing is
    added to it. A reader (``readonly``) writes nothing, not even the ``-wal`` and
    ``-shm`` files: with no log to read it opens a store it may write as a read-write
    connection that only queries (SQLite removes its log on close), and one it may not
    write (a read-only file or folder) as immutable; a store with a log left by a writer
    is read through it (``mode=ro``). A damaged store is read with a ``StoreWarning``.
    ``check=False`` skips the check (``db check`` runs its own, fuller one).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        readonly: bool = False,
        check: bool = True,
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.problems: list[str] = []  # what quick_check found (a reader goes on)
        if (readonly or not create) and not self.path.exists():
            raise StoreError(
                f"{self.path}: no such database", "the file does not exist", "check the path"
            )
        if self.path.exists() and self.path.is_dir():
            raise StoreError(
                f"{self.path}: is a directory", "a store is one SQLite file", "give a file path"
            )
        self._check_header()
        faults.opened(self.path)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self._open(readonly, check, existed)
        except BaseException:
            conn = getattr(self, "conn", None)
            if conn is not None:  # opened before the refusal: closed, nothing written
                conn.close()
            raise

    def _open(self, readonly: bool, check: bool, existed: bool) -> None:
        try:
            if readonly:
                self.conn = self._connect_readonly()
                self._check_readable()
                if check:
                    self.problems = warn_if_damaged(self.conn, self.path)
                return
            self.conn = self._connect(str(self.path), uri=False)
            if check and existed:
                refuse_if_damaged(self.conn, self.path)
            faults.waiting(
                self.conn, self.path, lambda: self.conn.execute("PRAGMA journal_mode=WAL")
            )
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise self._unopened(exc, readonly) from exc

    def _unopened(self, exc: sqlite3.DatabaseError, readonly: bool) -> StoreError:
        """Why the store could not be opened, as what it means: not a store or damaged
        only when SQLite says so (or a table of its own clashes with netassay's)."""
        code = faults.primary(exc)
        if code in (faults.CORRUPT, faults.NOTADB, faults.ERROR, None):
            damaged = StoreDamaged if code in (faults.CORRUPT, faults.NOTADB) else StoreError
            return damaged(
                f"{self.path}: cannot open the database",
                str(exc),
                "it is not a netassay store or it is damaged: 'netassay db check --db "
                f"{self.path}' says which; nothing was written to it",
            )
        return faults.cause(
            exc, self.path, kept="nothing was written to it, what it holds is intact",
            writing=not readonly,
        )  # fmt: skip

    @staticmethod
    def _connect(target: str, uri: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(target, uri=uri, timeout=30.0, isolation_level=None)
        conn.create_function("netassay_exclusion", 1, exclusion_of_json, deterministic=True)
        return conn

    def _connect_readonly(self) -> sqlite3.Connection:
        """A connection that writes nothing (see the class): through the writer's log
        when there is one, else leaving no log behind."""
        uri = self.path.resolve().as_uri()
        if Path(f"{self.path}-wal").exists():  # a writer's log: read through it
            if not Path(f"{self.path}-shm").exists() and not os.access(self.path.parent, os.W_OK):
                raise StoreError(
                    f"{self.path}: cannot be read in this read-only folder",
                    "its write-ahead log (-wal) needs a -shm file that cannot be made here",
                    "copy the store with its -wal file to a writable folder and read it there",
                )
            return self._connect(f"{uri}?mode=ro", uri=True)
        if os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK):
            conn = self._connect(str(self.path), uri=False)
            conn.execute("PRAGMA query_only = ON")  # SQLite removes its log when it closes
            return conn
        return self._connect(f"{uri}?mode=ro&immutable=1", uri=True)  # nothing can write it

    def _check_header(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb") as fh:
            head = fh.read(16)
        if head != b"SQLite format 3\x00":
            raise StoreError(
                f"{self.path}: not a SQLite database",
                "the file header is wrong (corrupted, or another kind of file)",
                "give a netassay .db file; nothing was written to this one",
            )

    # -- schema -----------------------------------------------------------------
    def _check_readable(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master")}
        if not {"schema_migrations", "experiments", "trials"} <= tables:
            raise StoreError(
                f"{self.path}: not a netassay store",
                "it is an SQLite file without netassay's tables",
                "give a .db written by 'netassay import' or 'netassay sweep'",
            )
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version}, this netassay reads {SCHEMA_VERSION}",
                "the store was written by a newer release",
                "upgrade netassay to read it",
            )
        if version < SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version}, this netassay reads {SCHEMA_VERSION}",
                "the store was written by an older release",
                f"migrate it once with 'netassay db migrate --db {self.path}' (its data is kept)",
            )

    def _migrate(self) -> None:
        """Create the schema, or bring it to this release's: once, under the store's
        write lock, the versions looked at again once it is held (another process may
        have created or migrated the store meanwhile); all or nothing."""
        if self._versions() == {v for v, _, _ in MIGRATIONS}:
            return  # the usual open: nothing to do, no lock taken
        with Transaction(self.conn, self.path, mapped=False):  # _unopened says what failed
            c = self.conn
            c.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                " description TEXT NOT NULL, applied_utc TEXT NOT NULL)"
            )
            have = self._versions()
            newest = max(have, default=0)
            if newest > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {newest} is newer than this netassay knows "
                    f"({SCHEMA_VERSION})",
                    "the store was written by a newer release; nothing was written to it",
                    "upgrade netassay",
                )
            for version, description, sql in MIGRATIONS:
                if version in have:
                    continue
                for stmt in split_sql(sql):
                    c.execute(stmt)
                c.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (version, description, utc_now()),
                )

    def _versions(self) -> set[int]:
        """The schema versions the store records (none: a new store)."""
        q = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        if self.conn.execute(q).fetchone() is None:
            return set()
        return {int(r[0]) for r in self.conn.execute("SELECT version FROM schema_migrations")}

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def migrations(self) -> list[tuple[int, str, str]]:
        return list(self.conn.execute("SELECT * FROM schema_migrations ORDER BY version"))

    # -- writing ----------------------------------------------------------------
    def add_experiment(
        self,
        *,
        key: str,
        kind: str,
        source: str,
        label: str,
        config: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> tuple[int, bool]:
        """Insert an experiment; return (id, created). An existing key is returned as is."""
        exp_id = self._experiment_id(key)
        if exp_id is not None:
            return exp_id, False
        try:
            with self.transaction() as w:
                exp_id = w.experiment(
                    key=key, kind=kind, source=source, label=label, config=config,
                    metadata=metadata, environment=environment,
                )  # fmt: skip
        except AlreadyStored as stored:  # by another process, after this one looked
            return stored.experiment_id, False
        return exp_id, True

    def import_experiment(
        self,
        *,
        key: str,
        kind: str,
        source: str,
        label: str,
        config: dict[str, Any],
        metadata: dict[str, Any],
        trials: Iterable[TrialRecord],
        environment: dict[str, Any] | None = None,
        runs: Iterable[dict[str, Any]] = (),
        with_trials: Callable[[Writer, list[int]], None] | None = None,
    ) -> tuple[int, int]:
        """Store an experiment and all its trials in one transaction.

        Returns (experiment id, trials written); an experiment already stored under the
        same key is left as it is and 0 trials are written, so importing twice never
        duplicates. On any error nothing of this experiment is written. ``runs`` (as
        ``Store.runs`` reads them from another store) are stored with it, and each
        trial's ``run_id`` is mapped from theirs to the new ones. ``with_trials`` is
        called in the same transaction with the new trials' ids, in the order given
        (a method's own rows that refer to its trials, such as ``rtt_runs``).
        """
        exp_id = self._experiment_id(key)
        if exp_id is not None:
            return exp_id, 0
        trials = list(trials)
        try:
            with self.transaction() as w:
                exp_id = w.experiment(
                    key=key, kind=kind, source=source, label=label, config=config,
                    metadata=metadata, environment=environment,
                )  # fmt: skip
                ids = {
                    r["id"]: w.run(exp_id, r["started_utc"], r["resumed"], r["environment"])
                    for r in runs
                }
                new = [w.trial(exp_id, t, ids) for t in trials]
                if with_trials is not None:
                    with_trials(w, new)
        except AlreadyStored as stored:  # by another process, after this one looked
            return stored.experiment_id, 0
        return exp_id, len(trials)

    def experiment_rows(self, experiment_id: int) -> ExperimentRows:
        """The experiment and every row that refers to it (``rows.experiment_rows``)."""
        return experiment_rows(self.conn, experiment_id)

    def import_rows(
        self, bundle: ExperimentRows, key: str, label: str, metadata: dict[str, Any]
    ) -> tuple[int, dict[str, int]]:
        """Another store's experiment (``experiment_rows``) written whole under ``key``,
        in one transaction; (its id, rows per table). A key already stored writes
        nothing: (its id, {})."""
        exp_id = self._experiment_id(key)
        if exp_id is not None:
            return exp_id, {}
        try:
            with self.transaction() as w:
                return import_rows(w, bundle, key, label, metadata)
        except AlreadyStored as stored:  # by another process, after this one looked
            return stored.experiment_id, {}

    def rows(
        self,
        table: str,
        where: dict[str, Any],
        order_by: tuple[str, ...] = (),
        columns: tuple[str, ...] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of a method's table (``rows.select``)."""
        return select(self.conn, table, where, order_by, columns)

    def ensure_tables(self, owner: str, version: int, ddl: str) -> bool:
        """A method's own tables, created once (``rows.ensure_tables``)."""
        return ensure_tables(self.conn, owner, version, ddl, self.path)

    def add_campaign(self, name: str, seed: int, spec: dict[str, Any]) -> int:
        """Record a campaign (its name, the seed of its run order, its file as resolved)."""
        with self.transaction() as w:
            return w.row(
                "campaigns",
                {"name": name, "created_utc": utc_now(), "tool_version": __version__,
                 "seed": int(seed), "spec_json": dumps(spec)},
            )  # fmt: skip

    def campaigns(self) -> list[StoredCampaign]:
        """Every campaign recorded, oldest first."""
        q = "SELECT id, name, created_utc, tool_version, seed, spec_json FROM campaigns"
        cur = self.conn.execute(q + " ORDER BY id")
        return [
            {"id": r[0], "name": r[1], "created_utc": r[2], "tool_version": r[3],
             "seed": int(r[4]), "spec": json.loads(r[5])}
            for r in cur
        ]  # fmt: skip

    def campaign(self, name: str) -> StoredCampaign | None:
        return next((c for c in self.campaigns() if c["name"] == name), None)

    def add_trial(self, experiment_id: int, trial: TrialRecord) -> None:
        """Append one trial and commit it at once (a crash loses only the trial in progress)."""
        self.add_trials(experiment_id, [trial])

    def add_trials(self, experiment_id: int, trials: Iterable[TrialRecord]) -> int:
        """Append trials in one transaction; a (load, repetition) already stored is an error."""
        now = utc_now()
        rows = [trial_row(experiment_id, t, now) for t in trials]
        try:
            with self._for(experiment_id), self.transaction():
                self.conn.executemany(INSERT_TRIAL, rows)
        except sqlite3.IntegrityError as exc:
            raise StoreError(
                f"{self.path}: trial already stored",
                str(exc),
                "trials are append-only; resume the sweep instead of repeating it",
            ) from exc
        return len(rows)

    def add_run(self, experiment_id: int, environment: dict[str, Any], *, resumed: bool) -> int:
        """Record one run of an experiment (its start or a resume) with the environment
        captured then; the trials it measures carry its id."""
        with self._for(experiment_id), self.transaction() as w:
            return w.run(experiment_id, utc_now(), resumed, environment)

    def update_config(self, experiment_id: int, config: dict[str, Any]) -> None:
        """Replace an experiment's stored config, committed at once."""
        with self._for(experiment_id), self.transaction() as w:
            w.config(experiment_id, config)

    def runs(self, experiment_id: int) -> list[StoredRun]:
        """The runs of one experiment, oldest first, with their environments."""
        cur = self.conn.execute(
            "SELECT id, started_utc, resumed, environment_json FROM runs"
            " WHERE experiment_id = ? ORDER BY id",
            (experiment_id,),
        )
        return [
            {
                "id": r[0],
                "started_utc": r[1],
                "resumed": bool(r[2]),
                "environment": json.loads(r[3]),
            }
            for r in cur
        ]

    def transaction(self) -> Transaction:
        """``with store.transaction() as w``: the writes of one transaction (``Writer``)."""
        return Transaction(self.conn, self.path)

    @contextmanager
    def _for(self, experiment_id: int) -> Iterator[None]:
        """A write of one experiment's: a store error says which experiment and what it
        holds (a full device: how many of its planned trials are stored)."""
        try:
            yield
        except StoreError as err:
            raise self._about(err, experiment_id) from err.__cause__

    def _about(self, err: StoreError, experiment_id: int) -> StoreError:
        try:
            exp = self.experiment(experiment_id)
            stored = self.count_trials(experiment_id)
        except (StoreError, sqlite3.Error):
            return err
        if isinstance(err, StoreFull):
            runs = exp.config.get("runs")
            planned = len(planned_rates(exp.config)) * runs if isinstance(runs, int) else 0
            of = f" of {planned}" if planned else ""
            err = faults.full(
                str(self.path),
                f"{stored}{of} trials of experiment {experiment_id} stored, nothing lost",
            )
        err.path, err.experiment, err.kind = str(self.path), experiment_id, exp.kind
        return err

    # -- reading ----------------------------------------------------------------
    def experiments(self, kinds: tuple[str, ...] | None = None) -> Iterator[Experiment]:
        """Every experiment, oldest first (only those of ``kinds`` when given)."""
        where = ""
        args: tuple[str, ...] = ()
        if kinds is not None:
            where = f" WHERE kind IN ({','.join('?' * len(kinds))})"
            args = tuple(kinds)
        cur = self.conn.execute(
            "SELECT id, key, kind, source, label, created_utc, tool_version, config_json,"
            f" metadata_json, environment_json FROM experiments{where} ORDER BY id",
            args,
        )
        for r in cur:
            yield _experiment(r)

    def experiment(self, experiment_id: int) -> Experiment:
        r = self.conn.execute(
            "SELECT id, key, kind, source, label, created_utc, tool_version, config_json,"
            " metadata_json, environment_json FROM experiments WHERE id = ?",
            (experiment_id,),
        ).fetchone()
        if r is None:
            raise StoreError(f"{self.path}: no experiment {experiment_id}", "", "list them")
        return _experiment(r)

    def find_experiment(self, key: str) -> Experiment | None:
        exp_id = self._experiment_id(key)
        return None if exp_id is None else self.experiment(exp_id)

    def _experiment_id(self, key: str) -> int | None:
        """The id of the experiment stored under ``key``, if there is one."""
        r = self.conn.execute("SELECT id FROM experiments WHERE key = ?", (key,)).fetchone()
        return int(r[0]) if r else None

    def trial_arrays(self, experiment_id: int) -> TrialArrays:
        """Columns of one experiment's usable trials, ordered by load index and repetition,
        and its loads: every load index of the plan and of the stored trials."""
        # Served from the covering index trials_curve (the wide rows are never read), one
        # row per load: sent and received of the load's trials as text, paired in scan order.
        # Measurement faults (excluded) are left out; what the sink itself dropped after
        # the SUT forwarded it counts as delivered; foreign frames a port counted (an
        # import's received above sent, within what they explain) are not delivered.
        rows = self.conn.execute(
            "SELECT load_index, rate_pps, count(*), group_concat(sent),"
            " group_concat(min(received + sink_dropped, sent))"
            " FROM trials WHERE experiment_id = ? AND excluded IS NULL"
            " GROUP BY load_index ORDER BY load_index",
            (experiment_id,),
        ).fetchall()
        warned, excluded = self.trial_warning_counts(experiment_id)
        loads = self._loads(experiment_id, rows, excluded)
        if not rows:
            empty = np.empty(0)
            return TrialArrays(empty.astype(np.int64), empty, empty, empty, warned, excluded, loads)
        k = np.array([r[2] for r in rows], dtype=np.int64)
        sent = np.fromstring(",".join(r[3] for r in rows), dtype=np.float64, sep=",")
        received = np.fromstring(",".join(r[4] for r in rows), dtype=np.float64, sep=",")
        if sent.size != k.sum() or received.size != k.sum():
            raise StoreError(
                f"{self.path}: experiment {experiment_id} has unreadable trial counts",
                "the store is damaged",
                "run 'netassay db check'",
            )
        return TrialArrays(
            np.repeat(np.array([r[0] for r in rows], dtype=np.int64), k),
            np.repeat(np.array([r[1] for r in rows], dtype=np.float64), k),
            sent,
            received,
            warned,
            excluded,
            loads,
        )

    def _loads(self, experiment_id: int, used: list[tuple[Any, ...]], excluded: int) -> Loads:
        """Every load index of the plan (config rates_pps) and of the stored trials."""
        row = self.conn.execute(
            "SELECT config_json FROM experiments WHERE id = ?", (experiment_id,)
        ).fetchone()
        try:
            plan = planned_rates(json.loads(row[0])) if row else []
        except ValueError:
            plan = []
        faults = []
        if excluded:  # served from trials_curve, which carries the excluded column
            faults = self.conn.execute(
                "SELECT load_index, rate_pps, excluded FROM trials"
                " WHERE experiment_id = ? AND excluded IS NOT NULL"
                " ORDER BY load_index, repetition",
                (experiment_id,),
            ).fetchall()
        return build_loads(plan, ((r[0], r[1], r[2]) for r in used), faults)

    def trial_warning_counts(self, experiment_id: int) -> tuple[int, int]:
        """(trials with warnings, trials excluded as measurement faults)."""
        q = (  # served from the partial index trials_warned
            "SELECT count(*), coalesce(sum(excluded IS NOT NULL), 0) FROM trials"
            " WHERE experiment_id = ? AND warnings_json != '[]'"
        )
        warned, excluded = self.conn.execute(q, (experiment_id,)).fetchone()
        return int(warned), int(excluded)

    def trials(self, experiment_id: int) -> list[dict[str, Any]]:
        """Every stored field of one experiment's trials (for export and reports)."""
        cur = self.conn.execute(
            "SELECT * FROM trials WHERE experiment_id = ? ORDER BY load_index, repetition",
            (experiment_id,),
        )
        names = [d[0] for d in cur.description]
        out = []
        for row in cur:
            rec = dict(zip(names, row, strict=True))
            for k in ("loss_location_json", "counters_json", "warnings_json", "cpu_json"):
                rec[k[: -len("_json")]] = json.loads(rec.pop(k))
            out.append(rec)
        return out

    def trial_records(self, experiment_id: int) -> list[TrialRecord]:
        """One experiment's trials as the records they were stored from (load order)."""
        return [
            TrialRecord(**{k: row[k] for k in _RECORD_FIELDS if k in row})
            for row in self.trials(experiment_id)
        ]

    def done_trials(self, experiment_id: int) -> set[tuple[int, int]]:
        """(load_index, repetition) pairs already stored: what a resumed sweep skips."""
        cur = self.conn.execute(
            "SELECT load_index, repetition FROM trials WHERE experiment_id = ?",
            (experiment_id,),
        )
        return {(int(a), int(b)) for a, b in cur}

    def count_trials(self, experiment_id: int | None = None) -> int:
        if experiment_id is None:
            return int(self.conn.execute("SELECT count(*) FROM trials").fetchone()[0])
        q = "SELECT count(*) FROM trials WHERE experiment_id = ?"
        return int(self.conn.execute(q, (experiment_id,)).fetchone()[0])

    def row_counts(self) -> dict[str, int]:
        """How many rows of each kind the store holds (what ``db check`` says)."""
        return row_counts(self.conn)

    def integrity_problems(self) -> list[str]:
        """SQLite's integrity check plus netassay's own invariants; [] when healthy."""
        return integrity_problems(self.conn, self.schema_version())

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_RECORD_FIELDS = tuple(f.name for f in fields(TrialRecord))


def _experiment(r: tuple[Any, ...]) -> Experiment:
    return Experiment(
        id=int(r[0]),
        key=r[1],
        kind=r[2],
        source=r[3],
        label=r[4],
        created_utc=r[5],
        tool_version=r[6],
        config=json.loads(r[7]),
        metadata=json.loads(r[8]),
        environment=json.loads(r[9]),
    )
