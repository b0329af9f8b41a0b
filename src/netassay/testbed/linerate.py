"""Line rate: what a NIC can carry, in frames per second, for one frame size.

On the wire every Ethernet frame is followed by its 4-byte FCS and preceded by 8 bytes
of preamble and start-of-frame delimiter, and frames are kept apart by a 12-byte
inter-frame gap: 24 bytes more than the frame netassay-gen hands to the interface
(``--size`` counts without the FCS, like trafgen). RFC 2544's smallest frame, 64 bytes
with its FCS (``--size 60``), takes 84 bytes on the wire: 14,880,952 frames/s at
10 Gb/s. netassay's smallest IPv4 frame (``--size 64``) takes 88.

The speed comes from ``/sys/class/net/IF/speed`` (Mb/s). Virtual interfaces report
none (an error or -1), or a nominal one that bounds nothing (veth says 10000 Mb/s once
up): their line rate is unknown, and said so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from netassay.errors import UsageError
from netassay.units import fmt_rate

FCS_BYTES = 4
PREAMBLE_SFD_BYTES = 8
IFG_BYTES = 12
OVERHEAD_BYTES = FCS_BYTES + PREAMBLE_SFD_BYTES + IFG_BYTES  # 24 beyond --size


def wire_bytes(size_bytes: int) -> int:
    """Bytes a frame of ``size_bytes`` (without FCS) takes on the wire."""
    return size_bytes + OVERHEAD_BYTES


def line_rate_pps(speed_mbps: float, size_bytes: int) -> float:
    """Frames per second a link of ``speed_mbps`` carries at most for this frame size."""
    return speed_mbps * 1e6 / (8 * wire_bytes(size_bytes))


def parse_speed(text: str | None) -> int | None:
    """The link speed in Mb/s from sysfs text, or None when the interface reports none
    (virtual interfaces: an empty read, an error, -1 or 0)."""
    try:
        speed = int((text or "").strip())
    except ValueError:
        return None
    return speed if speed > 0 else None


@dataclass(frozen=True)
class LineRate:
    """The slowest of the given ports, for one frame size (``speed_mbps`` None: unknown)."""

    speed_mbps: int | None
    size_bytes: int
    limited_by: str | None  # the port whose speed sets it

    @property
    def pps(self) -> float | None:
        if self.speed_mbps is None:
            return None
        return line_rate_pps(self.speed_mbps, self.size_bytes)

    def describe(self) -> str:
        wire = f"{wire_bytes(self.size_bytes)} bytes on the wire per {self.size_bytes}-byte frame"
        if self.pps is None:
            return f"line rate unknown: no port reports a link speed (virtual interfaces); {wire}"
        return (
            f"line rate {fmt_rate(self.pps)} ({self.speed_mbps} Mb/s on {self.limited_by}, {wire})"
        )

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "pps": self.pps, "wire_bytes": wire_bytes(self.size_bytes)}


def of_ports(speeds: dict[str, int | None], size_bytes: int) -> LineRate:
    """The line rate of a path through these ports (port -> speed in Mb/s or None): the
    slowest port that reports a speed bounds it."""
    known = {dev: s for dev, s in speeds.items() if s}
    if not known:
        return LineRate(None, size_bytes, None)
    dev = min(known, key=lambda d: known[d])
    return LineRate(known[dev], size_bytes, dev)


def refuse_above(rates_pps: list[float] | tuple[float, ...], line: LineRate, what: str) -> None:
    """Refuse loads above the line rate with one line (nothing to refuse when unknown)."""
    top = max(rates_pps, default=0.0)
    limit = line.pps
    if limit is None or top <= limit:
        return
    raise UsageError(
        f"{what} {fmt_rate(top)} is above the line rate",
        f"{line.speed_mbps} Mb/s on {line.limited_by} carries at most {fmt_rate(limit)} "
        f"{line.size_bytes}-byte frames ({wire_bytes(line.size_bytes)} bytes each on the "
        "wire with preamble, inter-frame gap and FCS)",
        f"keep loads at or below {fmt_rate(limit)}",
    )
