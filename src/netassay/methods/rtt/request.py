"""What an rtt measurement asks for (seed 002's factors): the data path, the probes, the
responder and its hold, the background load, the capture points. Each field is
declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netassay.errors import UsageError
from netassay.names import MAX_FRAME, MIN_FRAME
from netassay.params import DURATION, RATE, as_text, choice, flag, hold_ns, param, whole
from netassay.shared.probe_run import to_ns
from netassay.traffic.load import Load, NetLoad
from netassay.traffic.probe import ProbeSpec
from netassay.units import parse_duration, parse_rate

_RATE = as_text(parse_rate)
_DUR = as_text(parse_duration)
COUNT = 1000  # probes per run when neither --count nor --duration is given


def _load(v: Any) -> str:
    """A background load TYPE:N@WHERE or "none", as its canonical label."""
    if not isinstance(v, str):
        raise ValueError('expected TYPE:N@WHERE (cpu:32@sender) or "none"')
    try:
        return Load.parse(v).label
    except UsageError as exc:
        raise ValueError(exc.why or exc.what) from exc


# the run options its command takes (methods.base.RunOptions)
RUN_OPTIONS = ("db", "name", "label")


@dataclass(frozen=True)
class RttRequest:
    """One ``netassay rtt``: the testbed's data path, the probes, the responder, the
    load (units parsed)."""

    path: str = param(
        "--path", "Data path: bridge | macvlan | ipvlan | veth (routed).", default="bridge",
        check=choice("bridge", "macvlan", "ipvlan", "veth"),
    )  # fmt: skip
    probe: str = param(
        "--probe", "icmp (the kernel answers) | udp (an echo answers).", default="icmp",
        check=choice("icmp", "udp"),
    )  # fmt: skip
    rate_pps: float = param(
        "--probe-rate", "Probes per second, e.g. 1k.", default=1000.0, parse=_RATE,
        check=RATE, ordinal=True, show="1k", old=("--rate",), what="probes per second",
    )  # fmt: skip
    count: int | None = param(
        "--count", "Probes per run (or --duration).", default=None, cli=int,
        check=whole(1, 10_000_000), ordinal=True,
    )  # fmt: skip
    duration_s: float | None = param(
        "--duration", "Sending time per run, e.g. 2s.", default=None, parse=_DUR,
        check=DURATION, ordinal=True,
    )  # fmt: skip
    runs: int = param(
        "--runs", "Runs (the statistical unit).", default=10, cli=int, check=whole(1, 1000),
        ordinal=True,
    )  # fmt: skip
    size_bytes: int = param(
        "--size", "Frame size in bytes (no FCS).", default=MIN_FRAME, cli=int,
        check=whole(MIN_FRAME, MAX_FRAME),
        ordinal=True,
    )  # fmt: skip
    timeout_s: float = param(
        "--timeout", "Reply timeout.", default=1.0, parse=_DUR, check=DURATION, ordinal=True,
        show="1s",
    )  # fmt: skip
    load: str | None = param(
        "--load", "Background load TYPE:N@WHERE, e.g. cpu:32@sender.", default=None,
        check=_load, metavar="TYPE:N@WHERE",
    )  # fmt: skip
    load_rate_pps: float = param(
        "--load-rate", "net load: packets/s per background endpoint.", default=10_000.0,
        parse=_RATE, check=RATE, ordinal=True, show="10k",
    )  # fmt: skip
    load_burst: int = param(
        "--load-burst", "net load: packets per burst.", default=32, cli=int,
        check=whole(1, 1024), ordinal=True,
    )  # fmt: skip
    responder: str | None = param(
        "--responder", "kernel (icmp default) | app (udp default: an echo).", default=None,
        check=choice("kernel", "app"),
    )  # fmt: skip
    responder_delay: str | None = param(
        "--responder-delay",
        "Ground truth: hold each reply this long (200us); several (0,200us,1ms): runs "
        "interleaved over them, one experiment each.",
        default=None, check=hold_ns, ordinal=True,
    )  # fmt: skip
    capture: bool = param(
        "--no-capture", "No capture points (their cost is the difference).", default=True,
        cli=bool, negate=True, check=flag,
    )  # fmt: skip
    rate_check: bool = param(
        "--no-rate-check", "Skip the check that the path carries the probe rate.", default=True,
        cli=bool, negate=True, check=flag,
    )  # fmt: skip
    cpus: str = param(
        "--cpus", "auto: sender server on CPU 0, responder on CPU 1 | none.", default="auto",
        check=choice("auto", "none"),
    )  # fmt: skip
    ping_too: bool = param(
        "--ping-too", "Also the same path by iputils ping and irtt: a run of each after each run.",
        default=False,
        cli=bool, campaign=False,
    )  # fmt: skip

    def spec(self) -> ProbeSpec:
        spec = ProbeSpec(
            probe=self.probe, rate_pps=self.rate_pps, count=self.count,
            duration_s=self.duration_s, size_bytes=self.size_bytes, timeout_s=self.timeout_s,
        )  # fmt: skip
        if spec.count is None and spec.duration_s is None:
            spec = ProbeSpec(**{**spec.__dict__, "count": COUNT})
        return spec

    def delays(self) -> tuple[int, ...]:
        """The holds the runs are interleaved over (several --responder-delay)."""
        d = self.responder_delay
        if d and "," in d:
            return tuple(to_ns(x) or 0 for x in d.split(","))
        return ()

    def delay_ns(self) -> int | None:
        """The one hold (None: none given, or several: see ``delays``)."""
        return None if self.delays() else to_ns(self.responder_delay)

    def net(self) -> NetLoad:
        return NetLoad(rate_pps=self.load_rate_pps, burst=self.load_burst)
