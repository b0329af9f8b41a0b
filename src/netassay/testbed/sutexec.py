"""The user's own data plane as the SUT: ``--sut exec --sut-setup FILE`` (see
``testbed.dataplane``).

netassay builds the forwarding testbed as for a router (the SUT's two veths ``sut0``
and ``sut1`` with the router's addresses, static neighbours both ways, kernel
forwarding left off) and runs FILE in the SUT's namespace, in a process group of its
own, pinned to the SUT's CPU at nice -20 (its children inherit both), its output in the
run directory (``exec.log``). Its environment says where it is:

    NETASSAY_TESTBED, NETASSAY_NETNS      the testbed's name, the SUT's namespace
    NETASSAY_IN_DEV, NETASSAY_OUT_DEV     sut0 (from the generator), sut1 (to the sink)
    NETASSAY_IN_ADDR, NETASSAY_OUT_ADDR   their addresses, NETASSAY_PREFIX_LEN long
    NETASSAY_IN_MAC, NETASSAY_OUT_MAC     their MACs
    NETASSAY_TG_ADDR, NETASSAY_TG_MAC     the generator: the source, sut0's neighbour
    NETASSAY_SINK_ADDR, NETASSAY_SINK_MAC the sink: the destination, sut1's neighbour
    NETASSAY_IP_VERSION                   4 or 6
    NETASSAY_CPU                          the SUT's CPU ("" : not pinned)
    NETASSAY_DIR                          a directory of its own, removed afterwards

The generator sends test frames to sut0's MAC (as to a router): the data plane must
deliver them to the sink's MAC at sut1. FILE may keep running (a daemon in the
foreground) or return once it has set its data plane up; a non-zero exit before the
path forwards is an error. netassay then checks the path as it does an external
testbed's (``testbed.pathcheck``: probes must reach the sink, addressed to it), retrying
for up to ``START_S``, again before every run on a testbed left up, and ends FILE's
process group (SIGTERM, then SIGKILL) when the testbed goes down, before whatever else
still runs in the namespace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from netassay import names
from netassay.config import TestbedConfig
from netassay.errors import UsageError
from netassay.testbed.dataplane import PRIORITY, Site

LOG = "exec.log"
PIDFILE = "exec.pid"
WORKDIR = "exec"
START_S = 30.0  # how long the path may take to forward after FILE is started
# FILE as this process started it (its exit status, while this process runs)
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def validate(cfg: TestbedConfig) -> None:
    """``--sut-setup`` names a program netassay may run."""
    if not cfg.sut_setup:
        raise UsageError(
            "--sut exec without --sut-setup",
            "exec runs the data plane your program starts",
            "add --sut-setup FILE (a program run in the SUT's namespace)",
        )
    p = Path(cfg.sut_setup)
    if not p.is_file():
        raise UsageError(f"--sut-setup {cfg.sut_setup}: no such file", "", "give a program's path")
    if not os.access(p, os.X_OK):
        raise UsageError(
            f"--sut-setup {cfg.sut_setup} is not executable", "netassay runs it as a program",
            f"chmod +x {cfg.sut_setup} (and give it a #! line)",
        )  # fmt: skip


def uses_af_xdp(cfg: TestbedConfig) -> bool:
    return False  # unknown: the kernel router's wire


def environment_of(site: Site) -> dict[str, str]:
    """The NETASSAY_* variables FILE is given (see the module)."""
    a, m = site.addressing, site.macs
    return {
        "NETASSAY_TESTBED": site.name,
        "NETASSAY_NETNS": site.ns["sut"],
        "NETASSAY_IN_DEV": names.SUT_IN,
        "NETASSAY_OUT_DEV": names.SUT_OUT,
        "NETASSAY_IN_ADDR": str(a.sut_in),
        "NETASSAY_OUT_ADDR": str(a.sut_out),
        "NETASSAY_PREFIX_LEN": str(a.prefix_len),
        "NETASSAY_IN_MAC": m[names.SUT_IN],
        "NETASSAY_OUT_MAC": m[names.SUT_OUT],
        "NETASSAY_TG_ADDR": a.tg,
        "NETASSAY_TG_MAC": m[names.TG_DEV],
        "NETASSAY_SINK_ADDR": a.sink,
        "NETASSAY_SINK_MAC": m[names.SINK_DEV],
        "NETASSAY_IP_VERSION": str(a.ip_version),
        "NETASSAY_CPU": "" if site.sut_cpu is None else str(site.sut_cpu),
        "NETASSAY_DIR": str(site.run_dir / WORKDIR),
    }


def start(site: Site) -> dict[str, Any]:
    """Run FILE in the SUT's namespace, in its own process group; the path check
    (``dataplane.check_path``) then waits until it forwards."""
    script = Path(str(site.cfg.sut_setup)).resolve()
    env = environment_of(site)
    Path(env["NETASSAY_DIR"]).mkdir(parents=True, exist_ok=True)
    pin = ["taskset", "-c", str(site.sut_cpu)] if site.sut_cpu is not None else []
    with open(site.run_dir / LOG, "wb") as log:
        p = subprocess.Popen(
            ["ip", "netns", "exec", site.ns["sut"], *PRIORITY, *pin, str(script)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **env}, cwd=env["NETASSAY_DIR"], start_new_session=True,
        )  # fmt: skip
    _STARTED[p.pid] = p
    ticks = start_ticks(p.pid)
    (site.run_dir / PIDFILE).write_text(f"{p.pid} {ticks}\n")
    return {
        "exec": {
            "script": str(script),
            "sha256": hashlib.sha256(script.read_bytes()).hexdigest(),
            "pgid": p.pid,
            "start_ticks": ticks,
            "log": str(site.run_dir / LOG),
            "cpu": site.sut_cpu,
            "env": env,
        }
    }


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), None when it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def members(pgid: int, since: int | None) -> list[int]:
    """The live processes of group ``pgid`` started no earlier than ``since`` (a group
    id a later process reuses is never signalled)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" or int(fields[2]) != pgid:
            continue
        if since is not None and int(fields[19]) < since:
            continue
        out.append(int(d.name))
    return out


def end_group(pgid: int, since: int | None, grace_s: float = 3.0) -> list[int]:
    """SIGTERM the group, SIGKILL what is left after ``grace_s``; the pids signalled."""
    signalled = members(pgid, since)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not members(pgid, since):
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + grace_s
        while members(pgid, since) and time.monotonic() < deadline:
            time.sleep(0.02)
    return signalled


def _group(dp: dict[str, Any], state: dict[str, Any]) -> tuple[int, int | None] | None:
    from netassay.testbed.dataplane import run_dir

    name = state.get("name")
    with contextlib.suppress(OSError, ValueError, TypeError):
        pid, ticks = (run_dir(str(name)) / PIDFILE).read_text().split()
        return int(pid), int(ticks) if ticks != "None" else None
    e = dp.get("exec") or {}
    return (int(e["pgid"]), e.get("start_ticks")) if e.get("pgid") else None


def stop(dp: dict[str, Any], state: dict[str, Any]) -> None:
    """End FILE's process group."""
    group = _group(dp, state)
    if group is not None:
        end_group(*group)


def startup_failure(dp: dict[str, Any], name: str) -> str | None:
    """FILE ended with a non-zero status (while this process waits for the path)."""
    p = _STARTED.get(int(dp["exec"]["pgid"]))
    code = p.poll() if p is not None else None
    if not code:
        return None
    return f"{dp['exec']['script']} exited with status {code}: {log_tail(dp)}"


def log_tail(dp: dict[str, Any], lines: int = 3) -> str:
    if not dp.get("exec"):
        return "no log"
    try:
        text = Path(dp["exec"]["log"]).read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return " | ".join(text[-lines:]) or "no output"


def alive(dp: dict[str, Any], name: str) -> list[str]:
    return []  # FILE may return once its data plane is set: the path check says if it runs


def command_env(dp: dict[str, Any], name: str) -> dict[str, str]:
    """The setup program's own directory for a user's command (``NETASSAY_DIR``, as the
    program was given it: what it wrote there, a control socket, a pid)."""
    return {"NETASSAY_DIR": str(Path(dp["run_dir"]) / WORKDIR)}


def reader(dp: dict[str, Any], name: str) -> None:
    return None  # the user's data plane: no counters netassay knows how to read


def describe(dp: dict[str, Any]) -> list[str]:
    e = dp["exec"]
    live = members(int(e["pgid"]), e.get("start_ticks"))
    running = f"running: pids {live}" if live else "its processes have ended"
    return [
        f"  --sut-setup: {e['script']} (sha256 {e['sha256'][:16]}...), process group "
        f"{e['pgid']} ({running}), CPU {e['cpu']}",
        f"  its log: {e['log']}",
    ]


def version() -> str:
    return "the user's (--sut-setup)"
