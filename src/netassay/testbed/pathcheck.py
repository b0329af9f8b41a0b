"""The path check of an external testbed: a probe burst must come back, routed.

Before anything is measured, netassay-gen sends a short burst of test frames on the tx
port while a packet socket on the rx port watches what arrives. The path is good when
the probes come back (at least half of them) addressed to the expected MAC (the rx
port's own, unless told otherwise), to the destination address they were sent to, and
with their TTL (IPv4) or hop limit (IPv6) lowered: a router forwarded them. Otherwise
the check fails with one line saying what came back: nothing (and what else arrived),
too few, the wrong MAC, the wrong address, or the TTL as sent (a cable, a bridge or a
switch, not a router).

``parse_frame`` and ``judge`` are pure; ``capture`` opens the socket in the port's
network namespace (the host's when none is given).
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import select
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from netassay.errors import TestbedError

MAGIC = b"naG1"  # netassay-gen's payload magic (0x6e614731), right after the UDP header
SENT_TTL = 64  # netassay-gen's TTL and hop limit
PROBE_FRAMES = 100
PROBE_RATE_PPS = 2000.0
WAIT_S = 1.0  # how long after the burst frames may still arrive
MIN_SHARE = 0.5  # at least this share of the probes must come back
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
CLONE_NEWNET = 0x40000000


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def parse_frame(buf: bytes) -> dict[str, Any] | None:
    """What the check needs of one Ethernet frame (None when too short to say):
    ``dst_mac``, ``src_mac``, ``ethertype`` and for IPv4/IPv6 ``ttl``, ``src``, ``dst``,
    and ``probe`` (a UDP frame carrying netassay-gen's payload magic)."""
    if len(buf) < 14:
        return None
    out: dict[str, Any] = {"dst_mac": _mac(buf[0:6]), "src_mac": _mac(buf[6:12])}
    off = 12
    etype = int.from_bytes(buf[off : off + 2], "big")
    while etype in (0x8100, 0x88A8) and len(buf) >= off + 6:  # VLAN tags
        off += 4
        etype = int.from_bytes(buf[off : off + 2], "big")
    out["ethertype"] = etype
    ip = off + 2
    if etype == 0x0800 and len(buf) >= ip + 20:
        ihl = (buf[ip] & 0x0F) * 4
        proto, udp = buf[ip + 9], ip + ihl
        out.update(
            ttl=buf[ip + 8],
            src=str(ipaddress.IPv4Address(buf[ip + 12 : ip + 16])),
            dst=str(ipaddress.IPv4Address(buf[ip + 16 : ip + 20])),
        )
    elif etype == 0x86DD and len(buf) >= ip + 40:
        proto, udp = buf[ip + 6], ip + 40
        out.update(
            ttl=buf[ip + 7],
            src=str(ipaddress.IPv6Address(buf[ip + 8 : ip + 24])),
            dst=str(ipaddress.IPv6Address(buf[ip + 24 : ip + 40])),
        )
    else:
        out["probe"] = False
        return out
    out["probe"] = proto == 17 and buf[udp + 8 : udp + 12] == MAGIC
    return out


def _most(values: list[Any]) -> tuple[Any, int]:
    return Counter(values).most_common(1)[0]


def judge(
    frames: list[dict[str, Any]], sent: int, expect_mac: str, dst: str, rx: str, v6: bool,
    routed: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """The check's verdict on the frames that arrived at ``rx`` after ``sent`` probes:
    a record to store, with ``ok`` and, when not ok, ``problem`` (one sentence).
    ``routed``: the TTL must have been lowered (a router's path); False: a path that
    may switch them (an embedded data plane's: Open vSwitch, testpmd, the user's own)."""
    ttl_name = "hop limit" if v6 else "TTL"
    probes = [f for f in frames if f.get("probe")]
    others = [f for f in frames if not f.get("probe")]
    rec: dict[str, Any] = {
        "sent": sent,
        "came_back": len(probes),
        "other_frames": len(others),
        "expect_mac": expect_mac,
        "dst_macs": dict(Counter(f["dst_mac"] for f in probes)),
        # who sent them on: the SUT's port on this side (where --bidirectional sends back)
        "src_macs": dict(Counter(f["src_mac"] for f in probes)),
        "ttls": {str(k): v for k, v in Counter(f.get("ttl") for f in probes).items()},
        "dsts": dict(Counter(f.get("dst") for f in probes)),
    }
    problem = None
    if not probes:
        if others:
            mac, n = _most([f["src_mac"] for f in others])
            seen = f"{len(others)} other frame(s) arrived ({n} from {mac}), none of them a probe"
        else:
            seen = "nothing at all arrived"
        problem = f"none of the {sent} probe frames came back at {rx} within {WAIT_S:g} s: {seen}"
    else:
        mac, _ = _most([f["dst_mac"] for f in probes])
        addr, _ = _most([f.get("dst") for f in probes])
        ttl, _ = _most([f.get("ttl") for f in probes])
        rec["hops"] = SENT_TTL - ttl if isinstance(ttl, int) else None
        if mac != expect_mac.lower():
            problem = (
                f"the probes came back at {rx} addressed to MAC {mac}, not {expect_mac} "
                "(the MAC expected there): the SUT sends them to the wrong neighbour"
            )
        elif addr != dst:
            problem = f"the probes came back at {rx} addressed to {addr}, not {dst} (rewritten)"
        elif routed and (not isinstance(ttl, int) or ttl >= SENT_TTL):
            problem = (
                f"the probes came back at {rx} with {ttl_name} {ttl}, as sent ({SENT_TTL}): "
                "nothing routed them (a cable, a bridge or a switch between the ports?)"
            )
        elif len(probes) < MIN_SHARE * sent:
            problem = f"only {len(probes)} of the {sent} probe frames came back at {rx}"
    rec["ok"] = problem is None
    if problem:
        rec["problem"] = problem
    return rec


def failure(rec: dict[str, Any], src: str, dst: str) -> TestbedError:
    """The one-line error of a failed check."""
    return TestbedError(
        f"path check failed: {rec['problem']}",
        f"netassay-gen sent {rec['sent']} probe frames {src} -> {dst}",
        "check that the SUT routes the destination to the rx port (its route, its "
        "neighbour entry, forwarding on), then register the testbed again",
    )


@contextlib.contextmanager
def in_netns(netns: str | None) -> Iterator[None]:
    """Run the block in network namespace ``netns`` (this thread only; None: stay)."""
    if netns is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        try:
            target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
        except OSError as exc:
            raise TestbedError(
                f"no network namespace '{netns}'", str(exc), "check --netns"
            ) from exc
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise TestbedError(
                    f"cannot enter network namespace '{netns}'", os.strerror(err), "run as root"
                )
        finally:
            os.close(target)
        try:
            yield
        finally:
            libc.setns(own, CLONE_NEWNET)
    finally:
        os.close(own)


@contextlib.contextmanager
def capture(dev: str, netns: str | None) -> Iterator[socket.socket]:
    """A packet socket that sees every frame arriving at ``dev``."""
    with in_netns(netns):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            sock.bind((dev, ETH_P_ALL))
        except OSError:
            sock.close()
            raise
    try:
        yield sock
    finally:
        sock.close()


def collect(
    sock: socket.socket, until: float, enough: Callable[[int], bool]
) -> list[dict[str, Any]]:
    """Frames arriving until ``until`` (monotonic) or until ``enough(probes seen)``."""
    frames: list[dict[str, Any]] = []
    probes = 0
    while time.monotonic() < until and not enough(probes):
        ready, _, _ = select.select([sock], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            break
        buf, addr = sock.recvfrom(65535)
        if addr[2] == PACKET_OUTGOING:
            continue
        f = parse_frame(buf)
        if f is not None:
            frames.append(f)
            probes += bool(f.get("probe"))
    return frames


def probe(
    send: Callable[[float, float], int],
    rx: str,
    netns: str | None,
    expect_mac: str,
    dst: str,
    v6: bool,
    routed: bool = True,
) -> dict[str, Any]:
    """Send the burst (``send(rate_pps, duration_s)`` returns the frames sent) and judge
    what came back at ``rx`` (``routed``: see ``judge``)."""
    with capture(rx, netns) as sock:
        sent = send(PROBE_RATE_PPS, PROBE_FRAMES / PROBE_RATE_PPS)
        frames = collect(sock, time.monotonic() + WAIT_S, lambda n: n >= sent)
    return judge(frames, sent, expect_mac, dst, rx, v6, routed)
