"""Run netassay-probe: the sender (records streamed while it runs) and the echo.

The sender writes one 32-byte record per probe (seq, scheduled, sent, received; u64 ns)
in sequence order as each probe is answered or times out, and a JSON summary as the last
line on stderr; with ``socket_time`` a record has a fifth u64 (40 bytes): the time the
echo's socket gave it the probe, as the echo's reply carried it (0: no stamped reply).
``Sender.batches`` yields the records as arrays while the run goes on, so that a run of
any length is folded into histograms in bounded memory.
"""

from __future__ import annotations

import io
import json
import logging
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from netassay.errors import GeneratorError, UsageError
from netassay.names import MIN_FRAME
from netassay.proc import arg_num, artifact, die_with_parent, in_netns

log = logging.getLogger("netassay.methods.rtt")

BINARY = "netassay-probe"
PROBES = ("icmp", "udp")
RECORD = 32
SOCKET_RECORD = 40  # with --socket-time on: seq, sched, tx, rx, the echo socket's time
MIN_SIZE, MAX_SIZE = MIN_FRAME, 1514  # Ethernet frame without FCS; 1514 fits a 1500 MTU
MAX_RATE = 10_000_000


@dataclass(frozen=True)
class ProbeSpec:
    """What one run sends: the probe kind, the rate and how many, size, reply timeout."""

    probe: str = "icmp"
    rate_pps: float = 1000.0
    count: int | None = None
    duration_s: float | None = None
    size_bytes: int = MIN_FRAME
    timeout_s: float = 1.0

    def planned(self) -> int:
        if self.count is not None:
            return int(self.count)
        return round(self.rate_pps * float(self.duration_s or 0))

    def send_time_s(self) -> float:
        return self.planned() / self.rate_pps

    def validate(self) -> None:
        if self.probe not in PROBES:
            raise UsageError(f"unknown probe '{self.probe}'", "icmp or udp", "pick one")
        if not 1 <= self.rate_pps <= MAX_RATE:
            raise UsageError(
                f"bad probe rate {self.rate_pps:g}", "1 to 10M probes/s", "e.g. 1k or 100k"
            )
        if (self.count is None) == (self.duration_s is None):
            raise UsageError("give --count or --duration", "one of them, not both", "e.g. 1000")
        if self.count is not None and self.count < 1:
            raise UsageError(f"bad --count {self.count}", "at least one probe", "e.g. 1000")
        if self.planned() < 1:
            raise UsageError("no probe to send", "rate x duration is below one", "send longer")
        if not MIN_SIZE <= self.size_bytes <= MAX_SIZE:
            raise UsageError(
                f"bad probe size {self.size_bytes}",
                f"IPv4 probes are {MIN_SIZE}..{MAX_SIZE}-byte frames (no FCS)",
                "e.g. 64",
            )
        if not 0.001 <= self.timeout_s <= 60:
            raise UsageError(f"bad --timeout {self.timeout_s:g} s", "1 ms..60 s", "e.g. 1s")


@dataclass(frozen=True)
class Link:
    """The sender endpoint's own link: its interface, its address and the next hop's MAC.
    Given, ICMP requests leave as whole frames through a packet socket on ``dev``,
    skipping the IP stack's per-datagram work on the way out (probe.c says more)."""

    dev: str
    src: str
    dst_mac: str


class Sender:
    """A running ``netassay-probe send`` in the sender endpoint."""

    def __init__(
        self,
        netns: str,
        dst: str,
        spec: ProbeSpec,
        cpu: int | None,
        socket_time: bool = False,
        link: Link | None = None,
        alternate: bool = False,
    ) -> None:
        """``alternate`` (with ``link``): probes sent alone take the packet socket and the
        raw socket in turn, even and odd sequence numbers (the two compared in one run)."""
        argv = [str(artifact(BINARY)), "send", "--dst", dst, "--probe", spec.probe,
                "--rate", arg_num(spec.rate_pps), "--size", str(spec.size_bytes),
                "--timeout", arg_num(spec.timeout_s)]  # fmt: skip
        argv += ["--count", str(spec.planned())]
        if link is not None and spec.probe == "icmp":
            argv += ["--dev", link.dev, "--src", link.src, "--dst-mac", link.dst_mac]
            if alternate:
                argv += ["--alternate", "on"]
        if socket_time:
            argv += ["--socket-time", "on"]
        self.record = SOCKET_RECORD if socket_time else RECORD
        if cpu is not None:
            argv += ["--cpu", str(cpu)]
        self.argv = in_netns(netns, argv)
        self.spec = spec
        self.deadline = time.monotonic() + spec.send_time_s() + spec.timeout_s + 30
        log.debug("run: %s", " ".join(self.argv))
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=die_with_parent,
        )
        self._summary: dict[str, Any] | None = None

    def batches(self, max_records: int = 1 << 15) -> Iterator[np.ndarray]:
        """Arrays of records (N x 4 uint64: seq, sched, tx, rx; N x 5 with the socket's
        time) as the sender emits them."""
        stdout = self.proc.stdout
        assert isinstance(stdout, io.BufferedReader)  # a pipe Popen opened buffered (bufsize -1)
        rest = b""
        while True:
            chunk = stdout.read1(max_records * self.record)
            if not chunk:
                break
            data = rest + chunk
            whole = len(data) - len(data) % self.record
            rest = data[whole:]
            if whole:
                yield np.frombuffer(data[:whole], dtype=np.uint64).reshape(-1, self.record // 8)
            if time.monotonic() > self.deadline:
                self.kill()
                raise GeneratorError(
                    f"{BINARY} did not finish", "it ran past its deadline", "rerun with --debug"
                )

    def finish(self) -> dict[str, Any]:
        """Wait for the sender and return its JSON summary."""
        try:
            _, err = self.proc.communicate(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired as exc:
            self.kill()
            raise GeneratorError(f"{BINARY} did not finish", "timed out", "rerun") from exc
        lines = err.decode(errors="replace").strip().splitlines()
        if self.proc.returncode != 0 or not lines:
            raise GeneratorError(
                f"{BINARY} send failed (exit {self.proc.returncode})",
                lines[-1] if lines else "no output",
                "rerun with --debug; 'make setup' rebuilds it",
            )
        try:
            self._summary = json.loads(lines[-1])
        except ValueError as exc:
            raise GeneratorError(f"{BINARY} printed no summary", lines[-1], "rebuild") from exc
        return self._summary

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Echo:
    """``netassay-probe echo`` in the responder endpoint, for the run's probe kind.

    With ``busy_poll_us`` (udp; 0 included) the echo sets SO_BUSY_POLL on its socket,
    waits in a blocking read and counts the datagrams per NAPI id (SO_INCOMING_NAPI_ID):
    ``busy_poll`` is what it read back, ``napi_ids()`` the counts since the last call."""

    def __init__(
        self, netns: str, probe: str, delay_ns: int, cpu: int | None,
        busy_poll_us: int | None = None,
    ) -> None:  # fmt: skip
        argv = [str(artifact(BINARY)), "echo", "--probe", probe, "--delay", str(int(delay_ns))]
        if cpu is not None:
            argv += ["--cpu", str(cpu)]
        if busy_poll_us is not None:
            argv += ["--busy-poll", str(int(busy_poll_us))]
        self.argv = in_netns(netns, argv)
        log.debug("run: %s", " ".join(self.argv))
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=die_with_parent,
        )
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline().strip()
        if not first.startswith('{"ready"'):
            self.proc.kill()
            rest = self.proc.communicate()[1]
            raise GeneratorError(
                f"{BINARY} echo did not start",
                (first or rest.strip() or "no output").splitlines()[-1],
                "rerun with --debug",
            )
        self.busy_poll: dict[str, Any] = dict(json.loads(first).get("busy_poll") or {})

    def napi_ids(self, timeout_s: float = 2.0) -> dict[str, Any]:
        """The datagrams per NAPI id since the last call (``{"napi_ids": {id: n},
        "napi_other": n}``; the echo was started with ``busy_poll_us``)."""
        assert self.proc.stderr is not None
        self.proc.send_signal(signal.SIGUSR1)
        ready, _, _ = select.select([self.proc.stderr], [], [], timeout_s)
        line = self.proc.stderr.readline().strip() if ready else ""
        try:
            return dict(json.loads(line))
        except ValueError as exc:
            raise GeneratorError(
                f"{BINARY} echo did not report its NAPI ids", line or "no output",
                "rerun with --debug",
            ) from exc  # fmt: skip

    def stop(self) -> dict[str, Any]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        lines = (err or "").strip().splitlines()
        try:
            return dict(json.loads(lines[-1])) if lines else {}
        except ValueError:
            return {"output": lines[-1]}
