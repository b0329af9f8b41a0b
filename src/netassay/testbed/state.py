"""On-disk state of persistent testbeds, the per-testbed lock, and global sysctl restore.

A testbed built by ``netassay testbed up`` outlives the process, so what it is (its
knobs, MACs, namespaces) is written to ``/run/netassay/<name>.json``. A sweep holds
``/run/netassay/<name>.lock`` (``flock``) for its whole run: a second run on the same
testbed is refused. Global sysctls (``net.core.netdev_max_backlog``) are recorded in
``/run/netassay/sysctl.json`` the first time any testbed changes them and restored when
the last testbed goes away.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from netassay.errors import PrivilegeError, TestbedError
from netassay.testbed.names import validate_name


def run_dir() -> Path:
    """Where testbed state lives (``NETASSAY_RUN_DIR`` overrides, for tests)."""
    return Path(os.environ.get("NETASSAY_RUN_DIR", "/run/netassay"))


def state_path(name: str) -> Path:
    return run_dir() / f"{validate_name(name)}.json"


def write_state(name: str, state: dict[str, Any]) -> None:
    path = state_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    os.replace(tmp, path)


def read_state(name: str) -> dict[str, Any] | None:
    path = state_path(name)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
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


def remove_state(name: str) -> None:
    for path in (state_path(name), run_dir() / f"{name}.lock"):
        path.unlink(missing_ok=True)


def known_testbeds() -> list[str]:
    d = run_dir()
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.json") if p.stem != "sysctl")


class Lock:
    """An exclusive, non-blocking ``flock`` on one testbed; released on close or exit."""

    def __init__(self, name: str) -> None:
        self.name = validate_name(name)
        self.path = run_dir() / f"{self.name}.lock"
        self.fd: int | None = None

    def acquire(self) -> Lock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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


def set_global_sysctl(key: str, value: str) -> None:
    """Set a host-wide sysctl, recording its original value once for restore."""
    saved_path = run_dir() / "sysctl.json"
    saved = json.loads(saved_path.read_text()) if saved_path.exists() else {}
    if key not in saved:
        saved[key] = read_sysctl(key)
        saved_path.parent.mkdir(parents=True, exist_ok=True)
        saved_path.write_text(json.dumps(saved, indent=2))
    try:
        _sysctl_file(key).write_text(f"{value}\n")
    except OSError as exc:
        raise TestbedError(f"cannot set {key}={value}", str(exc), "run as root") from exc


def saved_sysctls() -> dict[str, str]:
    saved_path = run_dir() / "sysctl.json"
    return json.loads(saved_path.read_text()) if saved_path.exists() else {}


def restore_global_sysctls() -> dict[str, str]:
    """Put back every recorded original value; return what was restored."""
    saved_path = run_dir() / "sysctl.json"
    saved = saved_sysctls()
    for key, value in saved.items():
        try:
            _sysctl_file(key).write_text(f"{value}\n")
        except OSError as exc:
            raise TestbedError(
                f"cannot restore {key}={value}", str(exc), "restore it by hand with sysctl -w"
            ) from exc
    saved_path.unlink(missing_ok=True)
    return saved
