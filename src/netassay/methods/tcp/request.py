"""What a TCP measurement asks for: the congestion control, the socket buffers (the
window), the path's delay, loss and rate (ground truths of the embedded path), the runs.
Each field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay import names
from netassay.errors import NetassayError, UsageError
from netassay.params import DURATION, RATE, as_text, choice, fraction, param, tagged, whole
from netassay.testbed import tcppath
from netassay.units import parse_count, parse_duration, parse_pause, parse_rate

RUN_OPTIONS = ("db", "name", "label")
_DUR = as_text(parse_duration)
# what the delay line carries on time with TCP's own processes on a 2-CPU machine: at
# 200 Mbit/s 0.1% of the frames left over 1 ms late, at 500 Mbit/s 5% (measured)
DEFAULT_BOTTLENECK_BPS = 200e6


def parse_window(text: str) -> float:
    """Socket buffer bytes ('4M' = 4,000,000: k = 1000), or 0 for the kernel's."""
    if str(text).strip() in ("0", "default", "auto"):
        return 0.0
    n = parse_count(str(text), "window")
    if not 1024 <= n <= 2**31:
        raise UsageError(
            f"bad --window '{text}'", "a socket buffer of 1k..2G bytes",
            "e.g. --window 256k, or leave it out (the kernel's autotuning)",
        )  # fmt: skip
    return n


def parse_loss(text: str) -> float:
    try:
        return fraction(0.0, 1.0)(text)
    except ValueError as exc:
        raise UsageError(f"bad --loss '{text}'", str(exc), "give e.g. 1e-4 or 0.01%") from exc


def available_cc() -> tuple[str, ...]:
    """The congestion controls this kernel offers."""
    text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    return tuple(text.split())


def socket_max() -> int:
    """The largest socket buffer an application may ask for (net.core.rmem_max and
    wmem_max, the smaller)."""
    vals = [int(Path(f"/proc/sys/net/core/{k}").read_text()) for k in ("rmem_max", "wmem_max")]
    return min(vals)


def _delay(text: Any) -> float:
    """``--delay``: a duration with its unit ('20ms', '0.02s', or 0): milliseconds are
    its scale, so a bare number (20, which would be 20 s) is refused."""
    t = str(text).strip()
    if not isinstance(text, bool) and t.replace(".", "", 1).isdigit() and float(t) != 0:
        raise UsageError(
            f"bad --delay '{text}'", "a delay needs its unit (a bare number would be seconds)",
            f"write e.g. {t}ms or {t}s",
        )  # fmt: skip
    delay_s: float = as_text(parse_pause)(text)
    return delay_s


def _delay_check(v: Any) -> float:
    """A campaign file's delay, checked as --delay is."""
    try:
        return _delay(v)
    except NetassayError as exc:
        raise ValueError(exc.why) from exc


tagged(_delay, "DURATION")


@dataclass(frozen=True)
class TcpRequest:
    """One TCP cell: ``runs`` transfers of ``duration_s`` with ``cc`` over the path."""

    cc: str = param(
        "--cc", "Congestion control (this kernel's: net.ipv4.tcp_available_congestion_control"
        ", e.g. reno, cubic, bbr).", default="cubic", metavar="NAME",
    )  # fmt: skip
    window: float = param(
        "--window", "Socket buffers at both ends (iperf3 -w; k = 1000), e.g. 256k; the "
        "window the receiver advertises is read back and reported. 0: the kernel's "
        "autotuning.", default=0.0, parse=as_text(parse_window), ordinal=True, show="0",
        metavar="SIZE",
    )  # fmt: skip
    delay_s: float = param(
        "--delay", "Path: one-way delay each direction (the round trip adds twice it), "
        "e.g. 20ms; a number needs its unit (ms, s).", default=0.001, parse=_delay,
        check=_delay_check, ordinal=True, testbed=True, key="delay", show="1ms",
    )  # fmt: skip
    loss: float = param(
        "--loss", "Path: random loss probability of the client's data segments, e.g. 1e-4.",
        default=0.0, parse=as_text(parse_loss), check=fraction(0.0, 1.0), ordinal=True,
        testbed=True,
    )  # fmt: skip
    bottleneck_bps: float = param(
        "--bottleneck", "Path: its rate at L1 (a shaper on the client's egress), kept "
        "below what the delay line carries on time, e.g. 200M.", default=DEFAULT_BOTTLENECK_BPS,
        parse=as_text(parse_rate), check=RATE, ordinal=True, testbed=True,
        key="bottleneck", show="200M",
    )  # fmt: skip
    runs: int = param(
        "--runs", "Transfers in the cell.", default=3, cli=int, check=whole(1, 1000),
        ordinal=True,
    )  # fmt: skip
    duration_s: float = param(
        "--duration", "Length of each transfer (whole seconds), after --omit.", default=5.0,
        parse=_DUR, check=DURATION, ordinal=True, show="5s", key="duration",
    )  # fmt: skip
    omit_s: int = param(
        "--omit", "Seconds of each transfer's start (slow start) left out (iperf3 -O).",
        default=1, cli=int, check=whole(0, 60), ordinal=True, key="omit",
    )  # fmt: skip
    ip_version: int = param("--ip", "IP version: 4 | 6.", default=4, cli=int, check=choice(4, 6))
    mtu: int = param("--mtu", "The path's MTU.", default=1500, cli=int, check=whole(1280, 9000),
                     ordinal=True)  # fmt: skip

    def validate(self) -> None:
        """Refuse what this kernel cannot do before anything is built."""
        cc = available_cc()
        if self.cc not in cc:
            raise UsageError(
                f"congestion control '{self.cc}' is not available here",
                f"this kernel offers {', '.join(cc)}",
                "pick one of them (or load its module: modprobe tcp_<name>)",
            )
        most = socket_max()
        if self.window > most:
            raise UsageError(
                f"--window {self.window:.0f} bytes is over the kernel's maximum",
                f"net.core.rmem_max/wmem_max allow {most} bytes",
                f"give --window {most // 1000}k or less, or raise both with sysctl",
            )
        tcppath.validate(self.testbed())

    def testbed(self) -> tcppath.TcpPathConfig:
        return tcppath.TcpPathConfig(
            ip_version=self.ip_version, mtu=self.mtu, delay_s=self.delay_s, loss=self.loss,
            bottleneck_bps=self.bottleneck_bps or None,
        )  # fmt: skip


NAME = names.TCP_NAME
