"""Names and addresses of the embedded testbed; everything a user can name is checked here.

Every namespace is ``na-<id>-<role>`` so that cleanup finds them and touches nothing else.
Addresses come only from the benchmarking ranges (RFC 2544: 198.18.0.0/15, RFC 5180:
2001:2::/48).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from netassay.errors import UsageError

PREFIX = "na-"
ROLES = ("tg", "sut", "sink")
# The RTT testbed (netassay.testbed.rtt): two servers (sndsrv, rspsrv), a main endpoint
# on each (sndep, rspep) and background endpoints (sndbg0.., rspbg0..).
RTT_ROLE = r"(snd|rsp)(srv|ep|bg[0-9]{1,3})"
# The acceptance testbed (netassay.testbed.link): client, link, server.
ACCEPT_ROLES = ("cli", "link", "srv")
# The TCP path (netassay.testbed.tcppath): client, the path (its delay), server.
TCP_ROLES = ("cli", "path", "srv")
_ID = re.compile(r"[a-z0-9]{1,8}")
_NS = re.compile(rf"na-[a-z0-9]{{1,8}}-(tg|sut|sink|cli|link|path|srv|{RTT_ROLE})")
_RTT_ROLE = re.compile(RTT_ROLE)
BENCH_V4 = ipaddress.ip_network("198.18.0.0/15")
BENCH_V6 = ipaddress.ip_network("2001:2::/48")


def min_frame_bytes(ip_version: int) -> int:
    """The smallest frame netassay-gen sends (no FCS): Ethernet, IP and UDP headers and
    its 22-byte payload; 64 bytes at least."""
    return 14 + (40 if ip_version == 6 else 20) + 8 + 22


MIN_FRAME = min_frame_bytes(4)  # 64: the smallest --size, and its default over IPv4
MAX_FRAME = 1518  # the largest --size (no FCS) a testbed's veths and the XDP sink take


DEFAULT_NAME = "lab"  # the router testbed (sweep, search, flood)
RTT_NAME = "rtt"  # the rtt testbed
ACCEPT_NAME = "acc"  # the acceptance link
TCP_NAME = "tcp"  # the TCP path

# device names (each lives in its own namespace, so they never clash). The generator
# sends on tg0, through a pfifo qdisc (see topology.WIRE_QDISC), to the SUT's sut0.
TG_DEV, SUT_IN, SUT_OUT, SINK_DEV, BRIDGE = "tg0", "sut0", "sut1", "sink0", "br0"
# the rtt testbed: each server's uplink, each endpoint's one interface
RTT_UPLINK, RTT_EP_DEV = "up0", "eth0"
RTT_MAX_BACKGROUND = 128  # background endpoints per server, at most


def validate_name(name: str) -> str:
    """A testbed name: 1-8 lower-case letters or digits (it becomes part of netns names)."""
    if not isinstance(name, str) or not _ID.fullmatch(name):
        raise UsageError(
            f"bad testbed name {name!r}",
            "a name is 1 to 8 lower-case letters or digits (it is used in namespace names)",
            "pick a name like 'lab' or 't1'",
        )
    return name


def netns(name: str, role: str) -> str:
    known = (*ROLES, *ACCEPT_ROLES, *TCP_ROLES)
    if role not in known and not _RTT_ROLE.fullmatch(role):
        raise ValueError(f"unknown role {role!r}")
    return f"{PREFIX}{validate_name(name)}-{role}"


def is_testbed_netns(ns: str) -> bool:
    """True for namespaces netassay creates (and so may delete)."""
    return bool(_NS.fullmatch(ns))


def name_of(ns: str) -> str | None:
    """The testbed name of a netassay namespace, else None."""
    return ns.split("-")[1] if is_testbed_netns(ns) else None


# the SUTs addressed as a router (the generator sends to sut0's MAC) and as a bridge (to
# the sink's MAC, across the SUT)
ROUTED_SUTS = ("router", "xdp-router", "l3fwd", "exec")
SWITCHED_SUTS = ("bridge", "ovs", "testpmd")


@dataclass(frozen=True)
class Addressing:
    """Addresses of one testbed: generator source, sink destination, SUT interfaces."""

    ip_version: int
    prefix_len: int
    tg: str  # generator interface address (the test traffic source)
    sink: str  # sink interface address (the test traffic destination)
    sut_in: str | None  # router: SUT address facing the generator
    sut_out: str | None  # router: SUT address facing the sink


def addressing(sut: str, ip_version: int) -> Addressing:
    """The fixed addresses of a router or bridge testbed, all in the benchmarking ranges."""
    if ip_version not in (4, 6):
        raise UsageError(f"bad IP version {ip_version}", "netassay speaks IPv4 and IPv6", "4 or 6")
    # the XDP router and l3fwd forward on the router's routes; the user's data plane
    # (exec) is given them (its frames come to sut0's MAC, as to a router's)
    if sut in ROUTED_SUTS:
        if ip_version == 4:
            a = Addressing(4, 24, "198.18.0.2", "198.19.0.2", "198.18.0.1", "198.19.0.1")
        else:
            a = Addressing(
                6, 64, "2001:2:0:1::2", "2001:2:0:2::2", "2001:2:0:1::1", "2001:2:0:2::1"
            )
    elif sut in SWITCHED_SUTS:  # Open vSwitch and testpmd forward by MAC, as a bridge
        if ip_version == 4:
            a = Addressing(4, 15, "198.18.0.2", "198.19.0.2", None, None)
        else:
            a = Addressing(6, 48, "2001:2::2", "2001:2::3", None, None)
    else:
        raise UsageError(
            f"unknown SUT '{sut}'",
            f"known SUTs: {', '.join((*ROUTED_SUTS, *SWITCHED_SUTS))}",
            "pick one",
        )
    check_benchmark_addresses(a)
    return a


def check_benchmark_addresses(a: Addressing) -> None:
    """Refuse any address outside the benchmarking ranges (a guard against edits)."""
    net = BENCH_V4 if a.ip_version == 4 else BENCH_V6
    for addr in (a.tg, a.sink, a.sut_in, a.sut_out):
        if addr is not None and ipaddress.ip_address(addr) not in net:
            raise UsageError(
                f"address {addr} is outside {net}",
                "test traffic may only use the benchmarking ranges",
                "use 198.18.0.0/15 or 2001:2::/48",
            )
