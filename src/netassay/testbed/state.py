"""On-disk state of persistent testbeds, the per-testbed lock, and global sysctl restore.

A testbed built by ``netassay testbed up`` outlives the process, so what it is (its
knobs, MACs, namespaces) is written to ``/run/netassay/<name>.json``. A sweep holds
``/run/netassay/<name>.lock`` (``flock``) for its whole run: a second run on the same
testbed is refused. Global sysctls (``net.core.netdev_max_backlog``) are recorded in
``/run/netassay/sysctl.json`` the first time any testbed changes them and restored when
the last testbed goes away.

Every state file is written atomically (a temporary file in the same directory, then
``os.replace``), so a crash leaves the old file or the new one, never half of one. A file
that is unreadable all the same never stops a testbed from being removed: teardown and
cleanup drop it with a warning.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from netassay.errors import NetassayError, PrivilegeError, TestbedError
from netassay.names import validate_name

log = logging.getLogger("netassay.testbed")
SYSCTL_FILE = "sysctl.json"


def run_dir() -> Path:
    """Where testbed state lives (``NETASSAY_RUN_DIR`` overrides, for tests)."""
    return Path(os.environ.get("NETASSAY_RUN_DIR", "/run/netassay"))


def run_dir_error(exc: OSError) -> TestbedError:
    """One line for a run directory that cannot hold testbed state and locks."""
    d = run_dir()
    if isinstance(exc, FileExistsError | NotADirectoryError) or exc.errno == errno.ENOTDIR:
        # the run directory, or a folder above it, is a file
        file = next((p for p in (d, *d.parents) if p.exists() and not p.is_dir()), d)
        why = f"{file} is not a directory"
    else:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
    return TestbedError(
        f"the run directory {d} cannot hold testbed state and locks", why,
        "make it a writable directory, or point NETASSAY_RUN_DIR at one",
    )  # fmt: skip


def check_run_dir() -> Path:
    """The run directory, made if missing and written to once (a file made and removed):
    one line (``run_dir_error``) before anything is built when it cannot be (read-only,
    not a directory, no permission, full)."""
    d = run_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".write-check.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise run_dir_error(exc) from exc
    return d


def state_path(name: str) -> Path:
    return run_dir() / f"{validate_name(name)}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` so that readers see the old file or the whole
    new one: a temporary file in the same directory, synced, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_state(name: str, state: dict[str, Any]) -> None:
    write_json_atomic(state_path(name), state)


def begin_state(
    name: str, kind: str, config: dict[str, Any], namespaces: dict[str, str]
) -> dict[str, Any]:
    """The state of a testbed about to be built, written first so that a crash mid-build
    can be cleaned up; ``bed.Testbed`` marks it persistent once it is fully up."""
    state: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "config": config,
        "namespaces": namespaces,
        "pid": os.getpid(),
        "sysctls": {},
        "persistent": False,
    }
    write_state(name, state)
    return state


def read_state(name: str) -> dict[str, Any] | None:
    path = state_path(name)
    try:
        state: dict[str, Any] = json.loads(path.read_text())
        return state
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:  # the run directory itself is a file
        raise run_dir_error(exc) from exc
    except PermissionError as exc:
        raise PrivilegeError(
            f"reading testbed state {path} needs root", "permission denied", "run it with sudo"
        ) from exc
    except (OSError, ValueError) as exc:
        raise TestbedError(
            f"cannot read testbed state {path}",
            str(exc),
            "run 'netassay testbed cleanup' to remove the testbed and its state",
        ) from exc


def require_state(name: str) -> dict[str, Any]:
    """The state of the testbed ``name``; one line saying how to get one when there is none."""
    st = read_state(name)
    if st is None:
        raise _no_testbed(name)
    return st


def _no_testbed(name: str) -> TestbedError:
    return TestbedError(
        f"no testbed named '{name}'",
        f"none is up or registered (no state in {run_dir()})",
        f"bring it up ('netassay testbed up --name {name}') or register an external one "
        f"('netassay testbed external ... --name {name}')",
    )


class Seen:
    """The testbeds' states one run has read, each read once: its flags (a load as a
    share of the line rate), its knobs (the testbed that is up) and its checks (an
    external testbed's line rate) all see the same state. A run opens its testbed later,
    and that reads the state as it is then (``testbed.bed``)."""

    def __init__(self) -> None:
        self._states: dict[str, dict[str, Any] | None] = {}

    def read(self, name: str) -> dict[str, Any] | None:
        """The state of testbed ``name`` (None: none is up or registered), read the first
        time it is asked for."""
        if name not in self._states:
            self._states[name] = read_state(name)
        return self._states[name]

    def require(self, name: str) -> dict[str, Any]:
        """``read``, refused in one line when there is none (``require_state``)."""
        st = self.read(name)
        if st is None:
            raise _no_testbed(name)
        return st

    def __repr__(self) -> str:
        return f"Seen({sorted(self._states)})"


def remove_state(name: str) -> None:
    """Remove a testbed's state and lock files; an unreadable state file is removed too,
    with a warning (it never stops a teardown or a cleanup)."""
    path = state_path(name)
    try:
        json.loads(path.read_text())
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        log.warning("testbed state %s was unreadable (%s); removed it", path, exc)
    for p in (path, run_dir() / f"{name}.lock"):
        p.unlink(missing_ok=True)


def known_testbeds() -> list[str]:
    d = run_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.json") if p.name != SYSCTL_FILE)


class Lock:
    """An exclusive, non-blocking ``flock`` on one testbed; released on close or exit."""

    def __init__(self, name: str) -> None:
        self.name = validate_name(name)
        self.path = run_dir() / f"{self.name}.lock"
        self.fd: int | None = None

    def acquire(self) -> Lock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only or missing run directory, a file in its place
            raise run_dir_error(exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise TestbedError(
                f"testbed '{self.name}' is busy",
                f"another netassay run (pid {holder}) holds {self.path}",
                "wait for it to finish, or stop it first",
            ) from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Lock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# -- global sysctls --------------------------------------------------------------------
def _sysctl_file(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctl(key: str) -> str:
    return _sysctl_file(key).read_text().strip()


def _sysctl_saved_path() -> Path:
    return run_dir() / SYSCTL_FILE


def _read_saved() -> dict[str, str]:
    """The recorded original values; TestbedError if the record cannot be read."""
    path = _sysctl_saved_path()
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise TestbedError(
            f"cannot read the saved sysctls {path}",
            str(exc),
            "run 'netassay testbed cleanup', then check net.core.netdev_max_backlog",
        ) from exc
    if not isinstance(saved, dict):
        raise TestbedError(
            f"cannot read the saved sysctls {path}",
            "it is not a JSON object",
            "run 'netassay testbed cleanup', then check net.core.netdev_max_backlog",
        )
    return {str(k): str(v) for k, v in saved.items()}


def set_global_sysctl(key: str, value: str) -> None:
    """Set a host-wide sysctl, recording its original value once for restore."""
    saved = _read_saved()
    if key not in saved:
        saved[key] = read_sysctl(key)
        write_json_atomic(_sysctl_saved_path(), saved)
    try:
        _sysctl_file(key).write_text(f"{value}\n")
    except OSError as exc:
        raise TestbedError(f"cannot set {key}={value}", str(exc), "run as root") from exc


@contextmanager
def held_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (made where missing) for the block, waited for
    while another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def sysctl_lock() -> AbstractContextManager[None]:
    """Serialize claiming global sysctls between testbeds being built at the same time."""
    return held_lock(run_dir() / "sysctl.lock")


def refuse_sysctl_conflicts(name: str, wanted: dict[str, str], present: Iterable[str]) -> None:
    """Refuse global sysctl values that differ from those another testbed that is up holds.

    ``wanted``: what testbed ``name`` would set; ``present``: the network namespaces that
    exist now (a testbed with none of its namespaces left is not up). Same value: fine.
    """
    if not wanted:
        return
    present = set(present)
    for other in known_testbeds():
        if other == name:
            continue
        try:
            st = read_state(other)
        except NetassayError as exc:  # unreadable: warned, and skipped
            log.warning("%s; its sysctls are not known", exc.line())
            continue
        if not isinstance(st, dict) or not isinstance(st.get("sysctls"), dict):
            continue
        namespaces = st.get("namespaces")
        if not isinstance(namespaces, dict) or not present & set(namespaces.values()):
            continue  # not up
        for key, value in wanted.items():
            held = st["sysctls"].get(key)
            if held is not None and str(held) != str(value):
                raise TestbedError(
                    f"testbed '{name}' needs {key}={value}",
                    f"testbed '{other}' is up and holds it at {held}, and it is host-wide:"
                    f" changing it would change '{other}' under its records",
                    f"use the same value ({held}), or bring '{other}' down first"
                    f" ('netassay testbed down --name {other}')",
                )


def saved_sysctls() -> dict[str, str]:
    """The recorded original values ({} with a warning when the record is unreadable)."""
    try:
        return _read_saved()
    except TestbedError as exc:
        log.warning("%s", exc.line())
        return {}


def restore_if_last() -> dict[str, str]:
    """Put back the recorded originals when no testbed is left; under the lock a build
    holds while it sets them, so that a build cannot set a value between this reading
    the record and removing it (the value would stay, its original lost)."""
    with sysctl_lock():
        return {} if known_testbeds() else restore_global_sysctls()


def restore_global_sysctls() -> dict[str, str]:
    """Put back every recorded original value; return what was restored. An unreadable
    record is removed with a warning: the originals it held are lost."""
    saved_path = _sysctl_saved_path()
    try:
        saved = _read_saved()
    except TestbedError as exc:
        log.warning(
            "%s; removed it: the original values are lost, so set them by hand"
            " (net.core.netdev_max_backlog is 1000 by default)",
            exc.line(),
        )
        saved_path.unlink(missing_ok=True)
        return {}
    for key, value in saved.items():
        try:
            _sysctl_file(key).write_text(f"{value}\n")
        except OSError as exc:
            raise TestbedError(
                f"cannot restore {key}={value}", str(exc), "restore it by hand with sysctl -w"
            ) from exc
    saved_path.unlink(missing_ok=True)
    return saved
