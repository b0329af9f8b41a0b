"""iperf3 as a UDP sender (and a TCP one, ``tcp_argv``): its server (``-s -1 -J``) in the
server's namespace, its client (``-c ADDR -u -b RATE -l LEN -t DUR -J``) in the
client's; or only the client, against an iperf3 server the user runs at the far end
(``--get-server-output`` brings the receiver's intervals back). What they print is
returned as it is: reading it is the method's (``methods.accept.iperf3``,
``methods.tcp.run``)."""

from __future__ import annotations

import logging
import math
import subprocess
import time
from dataclasses import dataclass

from netassay.errors import ToolError
from netassay.proc import call_in_netns, in_netns, run

log = logging.getLogger("netassay.traffic.iperf3")
PORT = 5201
CONNECT_TIMEOUT_MS = 5000


def version() -> str:
    """The iperf3 in use, e.g. '3.12' (ToolError when it is missing)."""
    out = run(["iperf3", "--version"], timeout=10).stdout.split()
    return out[1] if len(out) > 1 else "unknown"


def whole_seconds(duration_s: float) -> int:
    """iperf3 runs whole seconds (-t is an integer)."""
    return max(1, math.ceil(duration_s - 1e-9))


@dataclass(frozen=True)
class Side:
    """Where one end runs: its namespace (None: this host's own), its CPU (None: any)."""

    netns: str | None
    cpu: int | None


def _argv(side: Side, argv: list[str]) -> list[str]:
    pin = [] if side.cpu is None else ["taskset", "-c", str(side.cpu)]
    return in_netns(side.netns, [*pin, *argv])


def _listening(netns: str | None, port: int, v6: bool) -> bool:
    """True when a TCP socket listens on ``port`` in ``netns`` (iperf3 is ready): read
    from /proc/net/tcp{,6} of that namespace, never by connecting (a -1 server would
    take a probe for its one test)."""
    name = "tcp6" if v6 else "tcp"

    def read() -> str:
        with open(f"/proc/thread-self/net/{name}") as f:
            return f.read()

    text = call_in_netns(netns, read)
    hexport = f":{port:04X}"
    return any(
        cols[1].endswith(hexport) and cols[3] == "0A"
        for cols in (ln.split() for ln in text.splitlines()[1:])
        if len(cols) > 3
    )


class Server:
    """``iperf3 -s -1 -J`` bound to the server's address: one test, then its JSON."""

    def __init__(self, side: Side, addr: str, port: int = PORT) -> None:
        self.side = side
        argv = ["iperf3", "-s", "-1", "-J", "-B", addr, "-p", str(port)]
        self.argv = _argv(side, argv)
        log.info("start: %s", " ".join(self.argv))
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 10
        while not _listening(side.netns, port, ":" in addr):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise ToolError("iperf3 server did not start", self._err(), "is iperf3 installed?")
            time.sleep(0.02)

    def _err(self) -> str:
        if self.proc.poll() is None:
            return "not listening after 10 s"
        return (self.proc.stderr.read() if self.proc.stderr else "").strip()[-200:] or "exited"

    def result(self, timeout_s: float) -> str:
        try:
            out, _ = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.close()
            raise ToolError("iperf3 server did not end", f"after {timeout_s:g} s", "") from exc
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def client_argv(
    addr: str,
    payload_bps: float,
    datagram_bytes: int,
    duration_s: float,
    port: int = PORT,
    socket_buffer: int | None = None,
    remote: bool = False,
) -> list[str]:
    argv = [
        "iperf3",
        "-c",
        addr,
        "-p",
        str(port),
        "-u",
        "-b",
        str(round(payload_bps)),
        "-l",
        str(datagram_bytes),
        "-t",
        str(whole_seconds(duration_s)),
        "-J",
        "--connect-timeout",
        str(CONNECT_TIMEOUT_MS),
    ]
    if socket_buffer:
        argv += ["-w", str(socket_buffer)]
    if remote:
        argv.append("--get-server-output")
    return argv


def tcp_argv(
    addr: str, duration_s: float, cc: str, window: int | None, omit_s: int, port: int = PORT
) -> list[str]:
    """iperf3's TCP client: one flow, congestion control ``cc``, socket buffers
    ``window`` at both ends (-w; None: the kernel's autotuning), the first ``omit_s``
    seconds (slow start) left out of its figures."""
    argv = [
        "iperf3", "-c", addr, "-p", str(port), "-t", str(whole_seconds(duration_s)), "-C", cc,
        "-O", str(omit_s), "-J", "--connect-timeout", str(CONNECT_TIMEOUT_MS),
    ]  # fmt: skip
    if window:
        argv += ["-w", str(window)]
    return argv


def exchange(
    client: Side,
    server: Side | None,
    addr: str,
    payload_bps: float,
    datagram_bytes: int,
    duration_s: float,
    *,
    socket_buffer: int | None = None,
    port: int = PORT,
) -> tuple[subprocess.CompletedProcess[str], str | None]:
    """One iperf3 UDP test: (the client's process, the server's JSON text); ``server``
    None: an iperf3 server already listens at ``addr`` (no server text)."""
    t = whole_seconds(duration_s)
    argv = client_argv(addr, payload_bps, datagram_bytes, t, port, socket_buffer,
                       remote=server is None)  # fmt: skip
    return test(client, server, addr, argv, t, port)


def test(
    client: Side, server: Side | None, addr: str, argv: list[str], t: float, port: int = PORT
) -> tuple[subprocess.CompletedProcess[str], str | None]:
    """Run the iperf3 client ``argv`` (its server started first when ``server`` is
    given) for about ``t`` seconds: (the client's process, the server's JSON text)."""
    srv = Server(server, addr, port) if server is not None else None
    try:
        try:
            cp = subprocess.run(_argv(client, argv), capture_output=True, text=True,
                                timeout=t + 30, check=False)  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise ToolError(
                f"iperf3 toward {addr} did not end", f"no result {t + 30:g} s after it started",
                "check that an iperf3 server listens there and the path carries its traffic",
            ) from exc  # fmt: skip
        return cp, srv.result(timeout_s=15) if srv else None
    finally:
        if srv:
            srv.close()
