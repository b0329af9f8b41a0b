"""What a batching measurement asks for: the data path, the paced train, the knobs that
change batching at the receiver, the burst threshold. Each field is declared once
(``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.errors import StoreError, UsageError
from netassay.names import MIN_FRAME, validate_name
from netassay.params import RATE, as_text, choice, hold_ns, param, whole
from netassay.shared.probe_run import to_ns
from netassay.units import parse_rate

RUN_OPTIONS = ("db", "name", "label")
NAME = "batch"  # its testbed's name
MAX_RATE = 200_000.0  # netassay-probe keeps its spacing up to about this here
MAX_SEND_S = 60.0  # one run's sending time, at most
MAX_FLUSH_NS = 100_000_000  # gro_flush_timeout: 100 ms at most (replies time out at 1 s)
MAX_DEFER = 1000  # napi_defer_hard_irqs
MAX_BUSY_POLL_US = 1000  # SO_BUSY_POLL: 1 ms at most (the kernel's docs suggest 50 to 100 us)


def _ns(v: Any) -> int | None:
    """A duration ('200us', '1ms', 0) in whole ns (None stays None)."""
    return None if v is None else to_ns(v)


@dataclass(frozen=True)
class BatchingRequest:
    """One ``netassay batching``: the path, the train, the receiver's knobs."""

    path: str = param(
        "--path", "Data path: bridge | veth (routed); the receiver is a veth either way.",
        default="bridge", check=choice("bridge", "veth"),
    )  # fmt: skip
    probe: str = param(
        "--probe", "icmp: the receiver's kernel answers (no socket) | udp: an application's"
        " UDP socket answers, and each probe is stamped a third time, when its recv call"
        " returned it.", default="icmp", check=choice("icmp", "udp"),
    )  # fmt: skip
    rate_pps: float = param(
        "--probe-rate", "Probes per second (the sent spacing is its inverse), e.g. 10k.",
        default=10_000.0, parse=as_text(parse_rate), check=RATE, ordinal=True, show="10k",
        old=("--rate",), what="probes per second",
    )  # fmt: skip
    count: int = param(
        "--count", "Probes per run.", default=2000, cli=int, check=whole(10, 10_000_000),
        ordinal=True,
    )  # fmt: skip
    runs: int = param(
        "--runs", "Runs (the statistical unit).", default=3, cli=int, check=whole(1, 1000),
        ordinal=True,
    )  # fmt: skip
    size_bytes: int = param(
        "--size", "Frame size in bytes (no FCS).", default=MIN_FRAME, cli=int,
        check=whole(MIN_FRAME, 1514),
        ordinal=True,
    )  # fmt: skip
    gro: str = param(
        "--gro", "GRO on the receiver's veth: on gives it a NAPI instance (batches) | off.",
        default="off", check=choice("on", "off"),
    )  # fmt: skip
    flush_ns: int = param(
        "--flush", "gro_flush_timeout of the receiver's veth (200us; 0: none).", default=0,
        parse=_ns, check=hold_ns, key="flush", ordinal=True, show="0",
    )  # fmt: skip
    defer: int = param(
        "--defer", "napi_defer_hard_irqs of the receiver's veth (0: none).", default=0,
        cli=int, check=whole(0, MAX_DEFER), ordinal=True,
    )  # fmt: skip
    xdp: str = param(
        "--xdp", "An XDP program that passes every frame, native on the receiver's veth: the"
        " veth then takes its frames into NAPI (its ring) as a NIC's driver does | off.",
        default="off", check=choice("on", "off"),
    )  # fmt: skip
    threaded: str = param(
        "--threaded", "Threaded NAPI on the receiver's veth (needs --gro or --xdp on): on | off.",
        default="off", check=choice("on", "off"),
    )  # fmt: skip
    busy_poll_us: int = param(
        "--busy-poll", "With --probe udp: the echo's socket busy-polls the receiver veth's NAPI"
        " instance for up to this many us when it reads and nothing is queued (SO_BUSY_POLL;"
        " needs --gro on or --xdp on; 0: off).", default=0, cli=int,
        check=whole(0, MAX_BUSY_POLL_US), key="busy_poll", ordinal=True,
    )  # fmt: skip
    gap_ns: int | None = param(
        "--burst-gap", "A gap under this joins two packets in a burst (default: half the"
        " sent spacing).", default=None, parse=_ns, check=hold_ns, key="burst_gap",
        ordinal=True,
    )  # fmt: skip
    cpus: str = param(
        "--cpus", "none: the whole path runs where the sender runs (no RPS) | auto: sender"
        " server on CPU 0, receiver on CPU 1 (RPS).", default="none",
        check=choice("none", "auto"),
    )  # fmt: skip

    @property
    def spacing_ns(self) -> float:
        return 1e9 / self.rate_pps

    @property
    def threshold_ns(self) -> float:
        return float(self.gap_ns) if self.gap_ns is not None else self.spacing_ns / 2

    def validate(self, db: str | None = None, name: str = NAME) -> None:
        """Refuse what makes no sense before anything is touched."""
        validate_name(name)
        for flag, value, known in (
            ("--path", self.path, ("bridge", "veth")), ("--probe", self.probe, ("icmp", "udp")),
            ("--gro", self.gro, ("on", "off")),
            ("--threaded", self.threaded, ("on", "off")), ("--cpus", self.cpus, ("none", "auto")),
            ("--xdp", self.xdp, ("on", "off")),
        ):  # fmt: skip
            if value not in known:
                raise UsageError(f"bad {flag} '{value}'", f"known: {', '.join(known)}", "pick one")
        for flag, number, lo, hi in (
            ("--runs", self.runs, 1, 1000), ("--count", self.count, 10, 10_000_000),
            ("--size", self.size_bytes, MIN_FRAME, 1514), ("--defer", self.defer, 0, MAX_DEFER),
        ):  # fmt: skip
            if not lo <= number <= hi:
                raise UsageError(f"bad {flag} {number}", f"{lo}..{hi}", "see --help")
        if not 1 <= self.rate_pps <= MAX_RATE:
            raise UsageError(
                f"bad --probe-rate {self.rate_pps:g}",
                f"1 to {MAX_RATE:g} probes/s (the probe keeps its spacing up to about that)",
                "e.g. 10k or 20k",
            )
        if self.count / self.rate_pps > MAX_SEND_S:
            raise UsageError(
                f"a run of {self.count} probes at {self.rate_pps:g}/s would send for over"
                f" {MAX_SEND_S:g} s", "", "give a smaller --count or a higher --probe-rate",
            )  # fmt: skip
        if self.gro == self.xdp == "off" and (self.flush_ns or self.defer or self.threaded == "on"):
            raise UsageError(
                "--flush, --defer and --threaded need --gro on or --xdp on",
                "they act on the receiver veth's NAPI instance, which it has only with GRO or"
                " an XDP program",
                "add --gro on (or --xdp on), or drop them",
            )
        self._validate_busy_poll()
        if not 0 <= self.flush_ns <= MAX_FLUSH_NS:
            raise UsageError(f"bad --flush {self.flush_ns} ns", "0..100ms", "e.g. 200us")
        if self.gap_ns is not None and not 0 < self.gap_ns < self.spacing_ns:
            raise UsageError(
                f"bad --burst-gap {self.gap_ns / 1e3:g} us",
                f"it must be above 0 and under the sent spacing ({self.spacing_ns / 1e3:g} us)",
                "leave it out (half the spacing) or give a shorter one",
            )
        if db:
            parent = Path(db).resolve().parent
            if not parent.is_dir():
                raise StoreError(f"{db}: no such directory {parent}", "", "create it first")

    def _validate_busy_poll(self) -> None:
        if isinstance(self.busy_poll_us, bool) or not isinstance(self.busy_poll_us, int):
            raise UsageError(f"bad --busy-poll '{self.busy_poll_us}'", "whole us", "e.g. 50")
        if not 0 <= self.busy_poll_us <= MAX_BUSY_POLL_US:
            raise UsageError(
                f"bad --busy-poll {self.busy_poll_us} us", f"0..{MAX_BUSY_POLL_US} us"
                " (SO_BUSY_POLL; 0: off)", "e.g. 50",
            )  # fmt: skip
        if not self.busy_poll_us:
            return
        if self.probe != "udp":
            raise UsageError(
                "--busy-poll needs --probe udp",
                "it acts on the echo's UDP socket; with icmp the receiver's kernel answers and"
                " no socket of netassay's reads the probes",
                "add --probe udp, or drop --busy-poll",
            )  # fmt: skip
        if self.gro == self.xdp == "off":
            raise UsageError(
                "--busy-poll needs --gro on or --xdp on",
                "a socket busy-polls the NAPI instance its packets came from, and the"
                " receiver's veth has one only with GRO or an XDP program",
                "add --gro on (or --xdp on), or drop --busy-poll",
            )  # fmt: skip
