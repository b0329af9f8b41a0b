"""What an acceptance test is: K runs of one UDP flow at a contracted rate.

Every rate here is UDP payload bits per second as the receiver counted them, unless a
name says otherwise; :mod:`netassay.analysis.acceptance` converts to the stated layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("ramp", "sustained")
SIDES = ("receiver", "sender")


@dataclass
class Interval:
    """One reporting interval (normally 1 s), receiver side unless the run says otherwise.

    ``bytes``: UDP payload bytes received in the interval; ``packets``: datagrams
    received; ``lost``: datagrams lost in it (sequence gaps, as iperf3 counts them).
    iperf3's own ``packets`` is received + lost: importers subtract.
    """

    start_s: float
    end_s: float
    bytes: int
    packets: int | None = None
    lost: int | None = None

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    @property
    def payload_bps(self) -> float | None:
        return self.bytes * 8 / self.seconds if self.seconds > 0 else None

    @property
    def loss_ratio(self) -> float | None:
        if self.packets is None or self.lost is None or self.packets + self.lost <= 0:
            return None
        return max(0, self.lost) / (self.packets + max(0, self.lost))


@dataclass
class CpuSample:
    """CPU use per core over the second ending at ``t_s`` (seconds from the run's start).

    ``cores``: "cpu0" -> shares 0..1 of user, system, irq, softirq, steal, idle, busy
    (as :func:`netassay.counters.cpu.use` returns; an import may give only ``busy``).
    """

    t_s: float
    cores: dict[str, dict[str, float]]


@dataclass
class AcceptRun:
    """One run: the sender offers ``offered_bps`` (payload) for ``duration_s``."""

    index: int
    tool: str
    tool_version: str | None
    phase: str  # "ramp" | "sustained"
    offered_bps: float | None
    datagram_bytes: int | None  # UDP payload per datagram; None when the input does not say
    ip_version: int
    duration_s: float
    sent_packets: int | None
    received_packets: int | None
    lost_packets: int | None
    reordered: int | None = None
    duplicates: int | None = None
    intervals: list[Interval] = field(default_factory=list)
    cpu: list[CpuSample] = field(default_factory=list)
    # counter deltas over the run, "<sender|receiver>.<counter>", e.g.
    # receiver.udp_rcvbuf_errors, sender.udp_sndbuf_errors, receiver.rx_dropped,
    # sender.tx_dropped, veth.l1.tx_dropped (the embedded server's backlog), and the
    # machine's host.softnet_dropped (for reading: other traffic counts there too)
    host: dict[str, int] = field(default_factory=dict)
    # verbatim facts: mitigations, MTU, socket buffers, irq/rps/xps masks, cpu pinning
    host_config: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None  # the tool's verbatim output (iperf3 -J JSON)
    # which side counted ``intervals`` ("receiver" normally; a client's iperf3 JSON
    # holds only the sender's)
    intervals_side: str = "receiver"
    # the receiver's totals when the tool gives them (iperf3 end.sum_received): the
    # run's mean receiver rate is received_bytes * 8 / received_s
    received_bytes: int | None = None
    received_s: float | None = None
    sent_bytes: int | None = None  # the sender's payload bytes, when known
    jitter_ms: float | None = None
    # which host each core of ``cpu`` belongs to ("sender", "receiver", "both"); empty:
    # every core sampled is the test host's
    cpu_roles: dict[str, str] = field(default_factory=dict)
    started_utc: str | None = None
    warnings: list[str] = field(default_factory=list)

    def payload_bps(self) -> float | None:
        """The run's mean receiver rate (UDP payload bits/s): the receiver's totals when
        given, else the time-weighted mean of the receiver intervals."""
        if self.received_bytes is not None and self.received_s:
            return self.received_bytes * 8 / self.received_s
        if self.intervals_side == "receiver" and self.intervals:
            secs = sum(i.seconds for i in self.intervals)
            if secs > 0:
                return sum(i.bytes for i in self.intervals) * 8 / secs
        return None

    def loss_ratio(self) -> float | None:
        """Lost / (received + lost), or lost / sent when received is unknown."""
        lost = self.lost_packets
        if lost is None:
            return None
        if lost <= 0:
            return 0.0
        if self.received_packets is not None and self.received_packets + max(0, lost) > 0:
            return max(0, lost) / (self.received_packets + max(0, lost))
        if self.sent_packets:
            return max(0, lost) / self.sent_packets
        return None

    def cpu_busy(self) -> dict[str, float]:
        """Per core: the mean busy share (0..1) over the run's CPU samples."""
        sums: dict[str, list[float]] = {}
        for s in self.cpu:
            for core, shares in s.cores.items():
                if "busy" in shares:
                    sums.setdefault(core, []).append(float(shares["busy"]))
        return {c: sum(v) / len(v) for c, v in sorted(sums.items(), key=_core_order) if v}


def _core_order(item: tuple[str, Any]) -> tuple[int, str]:
    name = item[0]
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else -1, name)


@dataclass
class AcceptTest:
    """An acceptance test: K sustained runs (and a ramp) against one contract."""

    source: str  # "netassay accept", "iperf3 import", "monipe import"
    name: str
    contract_bps: float | None  # None: an import without a contract (figures, no judgement)
    layer: str  # the layer the contract is counted at: payload | ip | ethernet | l1
    runs: list[AcceptRun]
    ramp: list[AcceptRun] = field(default_factory=list)
    scenario: dict[str, Any] = field(default_factory=dict)
    # ground truths of an embedded link (cap, drop) when there is one
    link: dict[str, Any] = field(default_factory=dict)
    # the store's key: the same key is stored once (re-import adds nothing); None: a
    # fresh key is made from the source, name and time
    key: str | None = None
    label: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
