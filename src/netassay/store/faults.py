"""What a store error means, and the wait for a store's write lock.

SQLite's and the operating system's errors are mapped to their cause, each said in one
line with what to do: no space on the device (SQLITE_FULL, ENOSPC), a read-only file,
folder or file system, a permission, a lock another process holds and does not let go
(its pid, from ``/proc/locks``), real damage (only then: ``db check`` and a copy), a
constraint a row met (never called damage). Every write takes the store's write lock
first (``BEGIN IMMEDIATE``); a writer that waits for another longer than a few seconds
says so once (a ``StoreWaiting`` warning) and goes on waiting, up to ``wait_limit_s``.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from netassay.errors import StoreDamaged, StoreError, StoreFull, StoreLocked, StoreWaiting

# SQLite's primary result codes (an extended code's low byte)
ERROR, PERM, BUSY, LOCKED, READONLY, IOERR, CORRUPT, FULL = 1, 3, 5, 6, 8, 10, 11, 13
CANTOPEN = 14
CONSTRAINT, AUTH, NOTADB = 19, 23, 26

SAY_AFTER_S = 5.0  # a writer waiting longer than this says so, once
WAIT_S = 600.0  # how long a writer waits for the lock (NETASSAY_STORE_WAIT_S changes it)
BUSY_MS = 30_000  # the busy timeout of every other statement (a reader in recovery)
LOW_SPACE = 64 * 1024  # bytes free under which an I/O error is the device being full
# the byte of the -shm file a WAL writer locks, and the lock bytes of a rollback journal
# (PENDING, RESERVED, SHARED range) in the database file
WAL_WRITE_BYTE = 120
ROLLBACK_LOCKS = (0x40000000, 0x40000000 + 511)

T = TypeVar("T")

# the stores this process opened, in order: an error SQLite raised where no store was
# named is said of the store it must have come from (the only one opened)
OPENED: list[str] = []


def opened(path: Path) -> None:
    if str(path) not in OPENED:
        OPENED.append(str(path))


def store_named() -> str | None:
    """The store an unnamed error came from: the one this process opened (None: none,
    or several)."""
    return OPENED[0] if len(OPENED) == 1 else None


def primary(exc: BaseException) -> int | None:
    """SQLite's primary result code of an error (None: not SQLite's, or not said)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_busy(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and primary(exc) in (BUSY, LOCKED)


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite said the store's file is damaged (``exc``, or the SQLite error a
    store error was raised from): malformed, or not a database."""
    if isinstance(exc, StoreDamaged):
        return True
    found = exc if isinstance(exc, sqlite3.DatabaseError) else exc.__cause__
    return isinstance(found, sqlite3.DatabaseError) and primary(found) in (CORRUPT, NOTADB)


def wait_limit_s() -> float:
    """How long a writer waits for another's write lock before it gives up."""
    try:
        return max(0.0, float(os.environ.get("NETASSAY_STORE_WAIT_S", WAIT_S)))
    except ValueError:
        return WAIT_S


# -- who holds the lock -------------------------------------------------------------------
def lock_holders(path: Path, locks: str | None = None) -> list[int]:
    """The pids (other than this one) holding the write lock of the store at ``path``:
    a WAL writer's lock on its ``-shm`` file, or a rollback journal's write locks on the
    file itself, as ``/proc/locks`` lists them ([] where it cannot be known)."""
    files: dict[tuple[int, int, int], str] = {}
    for f, file_kind in ((path, "db"), (Path(f"{path}-shm"), "shm")):
        try:
            st = os.stat(f)
        except OSError:
            continue
        files[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = file_kind
    if locks is None:
        try:
            locks = Path("/proc/locks").read_text()
        except OSError:
            return []
    by_inode = {ino: kind for (_, _, ino), kind in files.items()}
    out: list[int] = []
    for line in locks.splitlines():
        parts = line.split()
        if len(parts) < 8 or "->" in parts or parts[1] != "POSIX" or parts[3] != "WRITE":
            continue
        try:
            major, minor, inode = parts[5].split(":")
            dev_ino = (int(major, 16), int(minor, 16), int(inode))
            pid, start = int(parts[4]), int(parts[6])
            end = None if parts[7] == "EOF" else int(parts[7])
        except ValueError:
            continue
        kind = files.get(dev_ino) or by_inode.get(dev_ino[2])
        if kind == "shm":
            held = start <= WAL_WRITE_BYTE and (end is None or end >= WAL_WRITE_BYTE)
        elif kind == "db":
            held = start <= ROLLBACK_LOCKS[1] and (end is None or end >= ROLLBACK_LOCKS[0])
        else:
            held = False
        if held and pid > 0 and pid != os.getpid() and pid not in out:
            out.append(pid)
    return out


def command_of(pid: int) -> str:
    """A process's command line, short ('netassay import pastrami ...' for netassay's)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return ""
    argv = [a for a in argv if a]
    for i, arg in enumerate(argv):
        if arg == "netassay" or arg.endswith("/netassay"):
            argv = ["netassay", *argv[i + 1 :]]
            break
    text = " ".join(" ".join(argv).split())
    return text if len(text) <= 80 else text[:77] + "..."


def holder(path: Path) -> tuple[int | None, str]:
    """(pid, its command line) of the process holding the write lock; (None, '')."""
    pids = lock_holders(path)
    return (pids[0], command_of(pids[0])) if pids else (None, "")


# -- the wait -----------------------------------------------------------------------------
def waiting(conn: sqlite3.Connection, path: Path, action: Callable[[], T]) -> T:
    """``action`` (a statement that takes the write lock), retried while another process
    holds the lock: said once after ``SAY_AFTER_S``, given up after ``wait_limit_s``
    with the holder named (``StoreLocked``)."""
    limit = wait_limit_s()
    t0 = time.monotonic()
    said = False
    try:
        while True:
            left = max(0.0, limit - (time.monotonic() - t0))
            step = left if said else min(left, SAY_AFTER_S)
            conn.execute(f"PRAGMA busy_timeout = {int(step * 1000)}")
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if time.monotonic() - t0 >= limit:
                    raise locked(path, limit) from exc
                if not said:
                    said = True
                    _say_waiting(path, limit)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")


def holder_kind(cmd: str) -> str:
    """'another netassay' or 'another process', by the holder's command line as
    ``command_of`` writes it (netassay's start 'netassay ...'; a path that holds the
    word, a checkout in .../netassay/, makes no process netassay's)."""
    return "another netassay" if not cmd or cmd.startswith("netassay") else "another process"


def _say_waiting(path: Path, limit: float) -> None:
    pid, cmd = holder(path)
    other = holder_kind(cmd)
    who = "" if pid is None else f" (pid {pid}" + (f", {cmd})" if cmd else ")")
    warnings.warn(
        StoreWaiting(
            f"waiting for {other} writing {path}{who} ...; this one goes on when it is done "
            f"(it waits up to {limit:.0f} s)"
        ),
        stacklevel=4,
    )


def locked(path: Path, waited_s: float) -> StoreLocked:
    """The store's write lock held longer than this writer waits."""
    pid, cmd = holder(path)
    who = "another process" if pid is None else f"pid {pid}" + (f" ({cmd})" if cmd else "")
    err = StoreLocked(
        f"{path} is locked by {who}",
        f"it has held the store's write lock for over {waited_s:g} s, and this command "
        "wrote nothing while it waited",
        "wait for it to end (or stop it), then run the same command again "
        "(NETASSAY_STORE_WAIT_S sets how long a writer waits)",
    )
    err.pid = pid
    err.path = str(path)
    return err


# -- what an error means ------------------------------------------------------------------
def cause(
    exc: BaseException,
    path: Path | str | None,
    *,
    kept: str = "",
    todo: str = "",
    writing: bool = True,
) -> StoreError:
    """The error ``exc`` (SQLite's or the OS's) met on the store at ``path``, as what it
    means. ``kept``: what the store holds now, said with a full device ('' : intact);
    ``todo``: what to do once there is space ('' : run the command again); ``writing``:
    the command writes the store (a reader needs only to read it)."""
    where = Path(path) if path else None
    name = str(where) if where else "the store"
    code = primary(exc)
    os_errno = exc.errno if isinstance(exc, OSError) else None
    if (
        code == FULL
        or os_errno in (errno.ENOSPC, errno.EDQUOT)
        or (code == IOERR and where is not None and _low_space(where))
    ):
        return full(name, kept, todo)
    if code in (READONLY, CANTOPEN, PERM, AUTH) or os_errno in (
        errno.EACCES, errno.EPERM, errno.EROFS,
    ):  # fmt: skip
        found = access_problem(where, writing) if where else None
        if found is not None:
            return found
    if code in (BUSY, LOCKED) and where is not None:
        return locked(where, wait_limit_s())
    if code in (CORRUPT, NOTADB):
        return damaged(name, exc)
    if code == CONSTRAINT:
        return StoreError(
            f"{name}: a row this command wrote conflicts with one already stored",
            f"{exc}; nothing of it was written, and the store is not damaged",
            "run the same command again (what is stored is kept)",
        )
    if code == IOERR:
        return StoreError(
            f"{name}: the device holding it reported an input/output error",
            f"{exc}; the write in progress was undone",
            f"check the device (dmesg), then 'netassay db check --db {name}'",
        )
    if isinstance(exc, OSError):
        return StoreError(f"{name}: {exc.strerror or exc}", "", "check the path")
    said = getattr(exc, "sqlite_errorname", None)
    return StoreError(
        f"{name}: the store cannot be read",
        f"{exc}" + (f" ({said})" if said else ""),
        f"'netassay db check --db {name}' says whether the store is sound",
    )


def full(name: str, kept: str = "", todo: str = "") -> StoreFull:
    err = StoreFull(
        f"no space left on the device holding {name}",
        kept or "what it holds is intact, nothing lost (the write in progress was undone)",
        todo or "free space and run the same command again (what is stored is kept)",
    )
    err.path = name
    return err


def damaged(name: str, exc: BaseException) -> StoreDamaged:
    return StoreDamaged(
        f"{name}: the store is damaged",
        str(exc),
        f"'netassay db check --db {name}' lists the damage; restore a copy",
    )


def _low_space(path: Path) -> bool:
    try:
        st = os.statvfs(path.parent if not path.is_dir() else path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < LOW_SPACE


def access_problem(path: Path, writing: bool = True) -> StoreError | None:
    """Why this user cannot write (or, not ``writing``, read) the store at ``path``: a
    read-only file system, file or folder, a permission; None when nothing about access
    explains it."""
    folder = path.parent
    uid = os.geteuid()
    if not folder.is_dir():
        return StoreError(
            f"{path}: the folder {folder} does not exist", "", "create it or give another path"
        )
    try:
        ro_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        ro_fs = False
    if ro_fs and writing:
        return StoreError(
            f"{path}: the file system holding it is mounted read-only",
            "netassay can read the store there but not write it",
            "give --db a file on a writable file system (or remount it read-write)",
        )
    if not os.access(folder, os.X_OK):
        return StoreError(
            f"{path}: permission denied",
            f"user {uid} may not enter the folder {folder} ({_owner(folder)})",
            "run as a user who may, or give another path",
        )
    if path.exists() and not os.access(path, os.R_OK):
        return StoreError(
            f"{path}: permission denied",
            f"user {uid} may not read it ({_owner(path)})",
            "run as its owner (or a user who may read and write it), or change its permissions",
        )
    if not writing:
        return None
    if path.exists() and not os.access(path, os.W_OK):
        return StoreError(
            f"{path}: the file is read-only for user {uid}",
            f"{_owner(path)}; netassay can read it but not write it",
            "make it writable for this user, or write to a copy of it",
        )
    for log in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        if log.exists() and not os.access(log, os.W_OK):
            return StoreError(
                f"{path}: its log {log.name} is not writable by user {uid}",
                f"{_owner(log)}; another user wrote the store last",
                "write it as that user, or let both write the log (chmod g+w, a shared group)",
            )
    if not os.access(folder, os.W_OK):
        made = "" if path.exists() else " (a new store cannot be made there either)"
        return StoreError(
            f"{path}: the folder {folder} is read-only for user {uid}{made}",
            f"{_owner(folder)}; SQLite writes its log ({path.name}-wal) beside the store",
            "make the folder writable, or move the store to one that is",
        )
    return None


def _owner(p: Path) -> str:
    try:
        st = p.stat()
    except OSError:
        return "its owner unknown"
    return f"owner uid {st.st_uid}, mode {stat.filemode(st.st_mode)}"
