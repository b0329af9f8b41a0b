"""netassay-gen as the acceptance sender, with its own receiver.

The sender (AF_PACKET, paced to absolute deadlines) runs in the client's namespace; the
receiver (``netassay-gen --receive --interval 1s``, an AF_PACKET ring on the server's
interface) counts every datagram by sequence: exact loss (sent - unique received, the
tail included), reordering, duplicates, and per-second receive intervals. It reads the
frames before the server's IP stack (which drops them at its ingress hook), so no
socket buffer stands between the link and the count; its ring's own drops are the
receiver host's and are reported as such.
"""

from __future__ import annotations

import json
import time
from typing import Any

from netassay.errors import UsageError
from netassay.proc import run
from netassay.traffic import generator
from netassay.trial.accept import AcceptRun, Interval

TOOL = "netassay-gen"
UDP_IP_ETH = {4: 8 + 20 + 14, 6: 8 + 40 + 14}  # headers around a datagram's payload
MIN_DATAGRAM = 22  # the generator's payload: magic, flow, sequence, timestamp
BATCH_S = 0.001
DRAIN_S = 0.2  # after the sender ends: frames still in the link's queue arrive
STALL_WARN_S = 0.01  # a sender this late sends its backlog in one burst


def version() -> str:
    out = run([generator.find_generator(), "--version"], timeout=10).stdout.split()
    return out[-1] if out else "unknown"


def batch(pps: float) -> int:
    """Datagrams per send call: one call per millisecond, as iperf3 paces (its 1 ms
    timer), so that the sender sleeps between calls instead of polling the clock (a
    polling sender's core looks saturated); at most the generator's burst (64)."""
    return max(1, min(64, round(pps * BATCH_S)))


def frame_size(datagram_bytes: int, ip_version: int) -> int:
    size = datagram_bytes + UDP_IP_ETH[ip_version]
    if datagram_bytes < MIN_DATAGRAM or size > 1518:
        raise UsageError(
            f"netassay-gen cannot send {datagram_bytes}-byte datagrams",
            f"its frames are {MIN_DATAGRAM + UDP_IP_ETH[ip_version]}..1518 bytes",
            "use --datagram 1472 (IPv4) or 1452 (IPv6) at most, or --sender iperf3",
        )
    return size


def run_once(
    target: dict[str, Any],
    cpus: dict[str, int | None],
    payload_bps: float,
    datagram_bytes: int,
    ip_version: int,
    duration_s: float,
    *,
    index: int,
    phase: str,
) -> AcceptRun:
    """One run on the embedded link (``target``: the testbed state's)."""
    size = frame_size(datagram_bytes, ip_version)
    pps = payload_bps / (8 * datagram_bytes)
    rx_extra = ["--interval", "1s"] + (
        [] if cpus["server"] is None else ["--cpu", str(cpus["server"])]
    )
    tx_extra = ["--dst-port", "9", "--batch", str(batch(pps))]
    tx_extra += [] if cpus["client"] is None else ["--cpu", str(cpus["client"])]
    with generator.start_receiver(
        target["server_netns"], target["server_dev"], flows=1, extra=rx_extra
    ) as rx:
        tx = generator.run_generator(
            target["netns"],
            target["dev"],
            target["dst_mac"],
            target["src"],
            target["dst"],
            pps,
            duration_s,
            size_bytes=size,
            flows=1,
            best_effort=True,
            extra=tx_extra,
        )
        time.sleep(DRAIN_S)
        got = rx.stop()
    return to_run(index, phase, tx.raw, got, payload_bps, datagram_bytes, ip_version, duration_s)


def to_run(
    index: int,
    phase: str,
    tx: dict[str, Any],
    rx: dict[str, Any],
    payload_bps: float,
    datagram_bytes: int,
    ip_version: int,
    duration_s: float,
) -> AcceptRun:
    """An AcceptRun from the sender's and the receiver's JSON results."""
    sent = int(tx["sent"])
    unique = int(rx["unique"])
    intervals = [
        Interval(
            float(i["start_s"]),
            float(i["end_s"]),
            int(i["bytes"]),
            int(i["packets"]),
            int(i["lost"]),
        )
        for i in rx.get("intervals") or []
    ]
    span_s = (int(rx["last_rx_ns"]) - int(rx["first_rx_ns"])) / 1e9
    received_s = span_s * unique / (unique - 1) if unique > 1 and span_s > 0 else None
    warnings = []
    if not tx.get("ok", True):
        warnings.append(f"the sender missed its rate: achieved {tx.get('achieved_rate_pps')} pps")
    late_s = int(tx.get("lateness_max_ns") or 0) / 1e9
    if late_s >= STALL_WARN_S:
        burst = round(late_s * payload_bps / (8 * datagram_bytes))
        warnings.append(
            f"the sender stalled {late_s * 1e3:.0f} ms and caught up with a burst of ~{burst}"
            " datagrams: a queue on the path shorter than that loses them (the host's stall)"
        )
    return AcceptRun(
        index=index,
        tool=TOOL,
        tool_version=str(tx.get("version") or version()),
        phase=phase,
        offered_bps=payload_bps,
        datagram_bytes=datagram_bytes,
        ip_version=ip_version,
        duration_s=float(tx.get("duration_s") or duration_s),
        sent_packets=sent,
        received_packets=unique,
        lost_packets=max(0, sent - unique),
        reordered=int(rx.get("reordered", 0)),
        duplicates=int(rx.get("duplicated", 0)),
        intervals=intervals,
        received_bytes=unique * datagram_bytes,
        received_s=received_s,
        sent_bytes=sent * datagram_bytes,
        warnings=warnings,
        raw=json.dumps({"sender": tx, "receiver": rx}),
    )


def _raw(run_: AcceptRun, side: str) -> dict[str, Any]:
    return dict(json.loads(run_.raw).get(side) or {}) if run_.raw else {}


def ring_drops(run_: AcceptRun) -> int:
    """The receiver's own ring drops (frames the receiving host lost), from its JSON."""
    return int(_raw(run_, "receiver").get("ring_drops") or 0)


def lateness_max_us(run_: AcceptRun) -> int:
    """How late the sender was at worst against its schedule (a stall of its host)."""
    return int(_raw(run_, "sender").get("lateness_max_ns") or 0) // 1000
