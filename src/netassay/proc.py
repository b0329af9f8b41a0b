"""The one way netassay runs other programs: argument lists, a timeout, a log line."""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.errors import NetassayError, PrivilegeError, TestbedError, ToolError

log = logging.getLogger("netassay.proc")

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def die_with_parent() -> None:
    """A ``preexec_fn``: in the child before exec, SIGTERM it when the process that
    started it dies (a SIGKILLed netassay leaves no sender, receiver, echo or XDP program
    behind). ``ip netns exec`` execs its command, which keeps this setting."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def arg_num(x: float) -> str:
    """A rate, count or duration as a command-line argument, without losing precision."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def in_netns(netns: str | None, argv: Sequence[str]) -> list[str]:
    """Prefix ``argv`` so that it runs inside network namespace ``netns``."""
    if netns is None:
        return list(argv)
    return ["ip", "netns", "exec", netns, *argv]


def run(
    argv: Sequence[str],
    *,
    timeout: float = 30.0,
    check: bool = True,
    netns: str | None = None,
    input_text: str | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Run ``argv`` (never through a shell) and return its output; ``env``: variables
    added to netassay's own environment.

    Raises ToolError when the program is missing, times out, or (with ``check``)
    exits non-zero.
    """
    full = in_netns(netns, [str(a) for a in argv])
    if shutil.which(full[0]) is None:
        raise ToolError(
            f"cannot run {full[0]}",
            "it is not installed or not on PATH",
            "run 'make setup' (it installs the Debian packages netassay needs)",
        )
    log.debug("run: %s", " ".join(full))
    try:
        cp = subprocess.run(
            full,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input_text,
            check=False,
            env=None if env is None else {**os.environ, **env},
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(
            f"'{' '.join(full)}' did not finish",
            f"timed out after {timeout:g} s",
            "check the system load and try again",
        ) from exc
    res = Result(tuple(full), cp.returncode, cp.stdout, cp.stderr)
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        raise ToolError(
            f"'{' '.join(full)}' failed (exit {cp.returncode})",
            msg[-1] if msg else "no output",
            "see the message above; rerun with --debug for the full log",
        )
    return res


def netns_error(netns: str | None, exc: BaseException) -> NetassayError:
    """One line for a namespace whose counters cannot be read: gone, or not ours to join."""
    where = f"namespace {netns}" if netns else "this host's namespace"
    if isinstance(exc, PermissionError):
        return PrivilegeError(f"cannot read the counters of {where}", str(exc), "run as root")
    return TestbedError(f"cannot read the counters of {where}", str(exc), "is the testbed up?")


def call_in_netns(netns: str | None, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread that has joined network namespace ``netns`` (None: the
    host's). What it opens there (sockets, /proc/thread-self/net files) stays bound to
    that namespace after the thread ends. A namespace that does not exist is an error,
    never created."""
    if netns is None:
        return fn()
    from pyroute2 import netns as pr2_netns  # deferred: 80 ms that most commands never need

    box: dict[str, Any] = {}

    def body() -> None:
        try:
            pr2_netns.setns(netns, flags=0)  # this thread only; flags=0: never create it
            box["value"] = fn()
        except BaseException as exc:  # handed back to the caller
            box["error"] = exc

    t = threading.Thread(target=body, name=f"netns-{netns}")
    t.start()
    t.join()
    if "error" in box:
        raise netns_error(netns, box["error"]) from box["error"]
    return box["value"]


def artifact(name: str) -> Path:
    """A built RTT artifact (capture object, netassay-probe): installed in the venv by
    ``make setup``, else the repository's build directory."""
    for d in (
        Path(sys.prefix) / "share" / "netassay" / "rtt",
        Path(sys.prefix) / "bin",
        Path(__file__).resolve().parents[2] / "bpf" / "rtt" / "build",
    ):
        if (d / name).is_file():
            return d / name
    raise ToolError(
        f"cannot find {name}",
        f"it is not in {sys.prefix}/share/netassay/rtt or bpf/rtt/build",
        "run 'make setup' (it builds netassay's BPF programs and netassay-probe)",
    )
