"""The same path measured by the tools seed 002 and the issue compare with: iputils ping
(ICMP echo answered by the responder's kernel; send time from gettimeofday, receive
time from SO_TIMESTAMP) and irtt (UDP to an irtt server in the responder endpoint; Go
user-space timestamps). Each gives one run whose round trips go in the segment
``latency_sent``: like netassay's of that name, from the send call to the reply."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from netassay.errors import ToolError
from netassay.hist import Hist, HistSummary
from netassay.proc import die_with_parent, in_netns, run

PEERS = ("ping", "irtt")
IRTT_PORT = 2112
_PING_LINE = re.compile(r"icmp_seq=(\d+) .*time=([0-9.]+) ms")
_PING_SENT = re.compile(r"(\d+) packets transmitted, (\d+) received")


class PeerExtra(TypedDict, total=False):
    """What a peer tool's run says beside its counts: irtt's planned probes and the
    worst share of its timer's misses (None: it does not say), the runs pooled."""

    runs: int
    planned: int
    timer_miss_percent: float | None


class PeerSummary(PeerExtra):
    """A peer tool's run as stored and printed (``PeerRun.summary``): the tool, its
    counts, version and command, its round trips' statistics (``Hist.summary``) under
    ``latency_sent``, and its ``PeerExtra``."""

    peer: str
    sent: int
    received: int
    lost: int
    version: str
    argv: list[str]
    segments: dict[str, HistSummary]


@dataclass
class PeerRun:
    """One run of a peer tool: what it sent and got, its round trips as a histogram."""

    peer: str
    sent: int = 0
    received: int = 0
    hist: Hist = field(default_factory=Hist)
    argv: list[str] = field(default_factory=list)
    version: str = ""
    elapsed_s: float = 0.0
    extra: PeerExtra = field(default_factory=lambda: PeerExtra())

    def summary(self) -> PeerSummary:
        return {"peer": self.peer, "sent": self.sent, "received": self.received,
                "lost": self.sent - self.received, "version": self.version,
                "argv": self.argv, "segments": {"latency_sent": self.hist.summary()},
                **self.extra}  # fmt: skip


def _need(tool: str) -> str:
    exe = shutil.which(tool)
    if exe is None:
        raise ToolError(f"cannot run {tool}", "it is not installed", "run 'make setup'")
    return exe


def parse_ping(text: str) -> tuple[int, int, np.ndarray]:
    """(transmitted, received, round trips in ns) from iputils ping's output."""
    rtts = [round(float(m.group(2)) * 1e6) for m in _PING_LINE.finditer(text)]
    m = _PING_SENT.search(text)
    sent, got = (int(m.group(1)), int(m.group(2))) if m else (len(rtts), len(rtts))
    return sent, got, np.asarray(rtts, dtype=np.int64)


def ping(netns: str, dst: str, rate_pps: float, count: int, size: int, timeout_s: float) -> PeerRun:
    exe = _need("ping")
    argv = [exe, "-D", "-n", "-i", f"{1 / rate_pps:.6f}", "-c", str(count),
            "-s", str(max(16, size - 42)), "-W", f"{max(1, round(timeout_s))}", dst]  # fmt: skip
    t0 = time.monotonic()
    res = run(argv, netns=netns, check=False, timeout=count / rate_pps + timeout_s + 30)
    out = PeerRun("ping", argv=in_netns(netns, argv), elapsed_s=time.monotonic() - t0)
    if res.returncode not in (0, 1) or "packets transmitted" not in res.stdout:
        raise ToolError("ping failed", (res.stderr or res.stdout).strip()[-200:], "see --debug")
    out.sent, out.received, rtts = parse_ping(res.stdout)
    out.hist.add(rtts)
    out.version = (run([exe, "-V"], check=False).stdout.strip().splitlines() or [""])[0]
    return out


def parse_irtt(data: dict[str, Any]) -> tuple[int, int, np.ndarray]:
    """(sent, received, round trips in ns) from irtt client's JSON output."""
    trips = data.get("round_trips") or []
    rtts = [
        t["delay"]["rtt"] for t in trips if t.get("lost") == "false" and "rtt" in t.get("delay", {})
    ]
    stats = data.get("stats", {})
    sent = int(stats.get("packets_sent", len(trips)))
    return sent, int(stats.get("packets_received", len(rtts))), np.asarray(rtts, dtype=np.int64)


def irtt(snd: str, rsp: str, dst: str, rate_pps: float, count: int, size: int) -> PeerRun:
    exe = _need("irtt")
    server = [exe, "server", "-b", f"{dst}:{IRTT_PORT}", "-i", "0", "--timeout=30s"]
    proc = subprocess.Popen(
        in_netns(rsp, server),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=die_with_parent,
    )
    try:
        _wait_listening(proc)
        dur = count / rate_pps
        argv = [exe, "client", "-i", f"{round(1e9 / rate_pps)}ns", "-d", f"{dur:.6f}s",
                "-l", str(max(0, size - 42)), "-o", "-", "-Q", "--wait=1s",
                f"{dst}:{IRTT_PORT}"]  # fmt: skip
        t0 = time.monotonic()
        res = run(argv, netns=snd, check=False, timeout=dur + 30)
        out = PeerRun("irtt", argv=in_netns(snd, argv), elapsed_s=time.monotonic() - t0)
        if res.returncode != 0:
            raise ToolError("irtt failed", (res.stderr or res.stdout).strip()[-200:], "see --debug")
        data = json.loads(res.stdout)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    out.sent, out.received, rtts = parse_irtt(data)
    out.hist.add(rtts)
    out.version = str(data.get("version", {}).get("irtt", ""))
    timer = data.get("stats", {}).get("timer_miss_percent")
    out.extra = {"planned": count, "timer_miss_percent": timer}
    return out


def _wait_listening(proc: subprocess.Popen[str], limit_s: float = 10.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "ListenerStart" in line:
            return
    raise ToolError("irtt server did not start", "no listener line", "see --debug")
