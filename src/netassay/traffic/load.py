"""Background load of seed 002: its type (CPU or network), location and count.

``cpu:N@sender`` runs N busy processes (stress-ng) pinned to the sender server's CPU;
``net:N@responder`` makes N background endpoints of the *other* server send bursts of
UDP across the wire to their peers on the named one (netassay-gen in each), as the
seed's "packet bursts transmitted from the background VMs on the sender server to the
background VMs on the responder server". Every process runs inside a testbed namespace,
so a teardown ends any that is left; what ran is returned and stored with the runs.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from netassay.errors import ToolError, UsageError
from netassay.names import MIN_FRAME
from netassay.names import RTT_EP_DEV as EP_DEV
from netassay.names import RTT_MAX_BACKGROUND as MAX_BACKGROUND
from netassay.proc import die_with_parent, in_netns
from netassay.traffic.generator import build_args, find_generator

log = logging.getLogger("netassay.methods.rtt")

TYPES = ("cpu", "net")
LOCATIONS = ("sender", "responder")
_SPEC = re.compile(r"^(cpu|net):(\d+)@(sender|responder)$")


@dataclass(frozen=True)
class Load:
    """A background load; ``count`` 0 is no load."""

    type: str = "none"
    count: int = 0
    location: str = "sender"

    @classmethod
    def parse(cls, text: str | None) -> Load:
        if text is None or text.strip() in ("", "none"):
            return cls()
        m = _SPEC.match(text.strip())
        if not m:
            raise UsageError(
                f"bad --load '{text}'",
                "a load is TYPE:N@WHERE, TYPE cpu or net, WHERE sender or responder",
                "e.g. cpu:32@sender or net:8@responder (or none)",
            )
        n = int(m.group(2))
        if n > MAX_BACKGROUND:
            raise UsageError(
                f"bad --load '{text}'",
                f"{n} background loads is above the limit of {MAX_BACKGROUND}",
                "use 0 to 128 (seed 002: 0, 8, 32, 64, 128)",
            )
        if n == 0:
            return cls()
        return cls(m.group(1), n, m.group(3))

    @property
    def label(self) -> str:
        return "none" if not self.count else f"{self.type}:{self.count}@{self.location}"

    @property
    def side(self) -> str:
        return "snd" if self.location == "sender" else "rsp"

    def endpoints_needed(self) -> int:
        """Background endpoints per server this load needs."""
        return self.count if self.type == "net" else 0


@dataclass(frozen=True)
class NetLoad:
    """How hard each background endpoint sends (network load)."""

    rate_pps: float = 10_000.0  # per background endpoint
    burst: int = 32  # packets per send call: bursts of this many at the average rate
    size_bytes: int = MIN_FRAME


class Background:
    """The processes of one load, started on an RTT testbed and stopped with ``stop``."""

    def __init__(self, load: Load, state: dict[str, Any], net: NetLoad, max_s: float) -> None:
        self.load = load
        self.state = state
        self.net = net
        self.max_s = max_s
        self.procs: list[tuple[str, subprocess.Popen[str]]] = []
        self.started = 0.0

    def start(self) -> Background:
        try:
            if self.load.type == "cpu":
                self._cpu()
            elif self.load.type == "net":
                self._net()
        except BaseException:
            self.stop()
            raise
        self.started = time.monotonic()
        return self

    def _spawn(self, what: str, netns: str, argv: list[str]) -> None:
        full = in_netns(netns, argv)
        log.debug("run: %s", " ".join(full))
        proc = subprocess.Popen(
            full,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=die_with_parent,
        )
        self.procs.append((what, proc))

    def _cpu(self) -> None:
        exe = shutil.which("stress-ng")
        if exe is None:
            raise ToolError("cannot run stress-ng", "it is not installed", "run 'make setup'")
        cpu = self.state["cpus"][self.load.side]
        argv = [exe, "--cpu", str(self.load.count), "--cpu-load", "100",
                "--timeout", f"{int(self.max_s) + 1}s", "--quiet"]  # fmt: skip
        if cpu is not None:
            argv += ["--taskset", str(cpu)]
        self._spawn("stress-ng", self.state["namespaces"][f"{self.load.side}srv"], argv)

    def _net(self) -> None:
        gen = find_generator()
        src_side = "snd" if self.load.side == "rsp" else "rsp"
        cpu = self.state["cpus"][src_side]
        for i in range(self.load.count):
            role = f"{src_side}bg{i}"
            peer = self.state["peers"][role]
            extra = ["--best-effort", "--batch", str(self.net.burst)]
            if cpu is not None:
                extra += ["--cpu", str(cpu)]
            args = build_args(
                EP_DEV, peer["dst_mac"], peer["src"], peer["dst"], self.net.rate_pps,
                self.max_s, self.net.size_bytes, extra=extra,
            )  # fmt: skip
            self._spawn(role, self.state["namespaces"][role], [gen, *args])

    def status(self) -> dict[str, Any]:
        """The load as it is now: what it is and how many of its processes still run."""
        return {"load": self.load.label, "type": self.load.type, "count": self.load.count,
                "location": self.load.location if self.load.count else None,
                "net": vars(self.net) if self.load.type == "net" else None,
                "processes": len(self.procs),
                "running": sum(p.poll() is None for _, p in self.procs)}  # fmt: skip

    def stop(self) -> dict[str, Any]:
        """Stop every process; return what ran (type, count, location, per-process result)."""
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        ran: list[dict[str, Any]] = []
        for what, proc in self.procs:
            try:
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            ran.append({"process": what, "exit": proc.returncode, **_result(out)})
        self.procs.clear()
        held = time.monotonic() - self.started if self.started else 0.0
        return {"load": self.load.label, "type": self.load.type, "count": self.load.count,
                "location": self.load.location, "held_s": round(held, 3),
                "net": vars(self.net) if self.load.type == "net" else None,
                "processes": _summarize(ran)}  # fmt: skip

    def __enter__(self) -> Background:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.procs:
            self.stop()


def _result(out: str) -> dict[str, Any]:
    """netassay-gen's JSON result (the fields worth keeping), else nothing."""
    try:
        data = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except ValueError:
        return {}
    keep = ("sent", "achieved_rate_pps", "duration_s", "technique", "egress_drops")
    return {k: data[k] for k in keep if k in data}


def _summarize(ran: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the load's processes (one entry per process would not stay small)."""
    if not ran:
        return {}
    out: dict[str, Any] = {"n": len(ran), "exits": sorted({r["exit"] for r in ran})}
    sent = [r["sent"] for r in ran if "sent" in r]
    if sent:
        out["sent"] = int(sum(sent))
        out["achieved_rate_pps"] = round(sum(r.get("achieved_rate_pps", 0) for r in ran), 1)
    return out


@contextmanager
def cpu_hog(cpu: int | None, load_pct: int = 50, max_s: float = 3600) -> Iterator[None]:
    """Another tenant of the host for as long as the block runs: ``stress-ng`` holding
    ``cpu`` at ``load_pct`` percent (nothing when ``cpu`` is None), ended on the way
    out (and after ``max_s`` at the latest, whatever happens to this process)."""
    if cpu is None:
        yield
        return
    exe = shutil.which("stress-ng")
    if exe is None:
        raise ToolError("cannot run stress-ng", "it is not installed", "run 'make setup'")
    proc = subprocess.Popen(
        [exe, "--cpu", "1", "--cpu-load", str(int(load_pct)), "--taskset", str(cpu),
         "--timeout", f"{int(max_s)}s", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.5)  # its workers started
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
