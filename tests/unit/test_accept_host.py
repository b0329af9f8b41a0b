"""Reading the test host's counters: /proc/net/snmp, softnet_stat, netlink link stats."""

from __future__ import annotations

import socket
import struct

from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

from netassay.counters import host

_HEAD = "InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors"
SNMP = (
    "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
    f"Udp: {_HEAD} IgnoredMulti MemErrors\nUdp: 3095290 0 19549 2 19549 0 0 0 0\n"
    f"UdpLite: {_HEAD} IgnoredMulti MemErrors\nUdpLite: 0 0 0 0 0 0 0 0 0\n"
)

SOFTNET = (
    "0aefe2b6 00000000 0000000c 00000000 00000000 00000000 00000000 00000000 00000000 "
    "000ba2df 00000000 00000000 00000000 00000000 00000000\n"
    "2456f734 003bc313 00031eb8 00000000 00000000 00000000 00000000 00000000 00000000 "
    "02500ba9 00000000 00000000 00000001 00000000 00000000\n"
)


def test_udp_counters_from_snmp():
    got = host.parse_snmp_udp(SNMP)
    assert got["udp_rcvbuf_errors"] == 19549 and got["udp_in_errors"] == 19549
    assert got["udp_in_datagrams"] == 3095290 and got["udp_sndbuf_errors"] == 0
    assert "udp_in_csum_errors" not in got and host.parse_snmp_udp("Ip: 1\n") == {}


def test_softnet_per_cpu_by_its_id_column():
    got = host.parse_softnet(SOFTNET)
    assert got["cpu0"] == {"processed": 0x0AEFE2B6, "dropped": 0, "time_squeeze": 12}
    assert got["cpu1"]["dropped"] == 0x3BC313 and got["cpu1"]["time_squeeze"] == 0x31EB8


def _attr(kind: int, payload: bytes) -> bytes:
    n = 4 + len(payload)
    return struct.pack("HH", n, kind) + payload + b"\0" * ((4 - n % 4) % 4)


def test_link_stats_from_a_netlink_message():
    # RTM_NEWLINK as the kernel sends it: IFLA_IFNAME (3), IFLA_MTU (4), IFLA_STATS64 (23,
    # struct rtnl_link_stats64: 25 u64 on kernel 6.x), decoded by pyroute2
    stats = list(range(1, 26))
    body = struct.pack("BxHiII", socket.AF_UNSPEC, 1, 7, 0, 0)
    body += _attr(3, b"s0\0") + _attr(4, struct.pack("I", 9000))
    body += _attr(23, struct.pack(f"{len(stats)}Q", *stats))
    msg = ifinfmsg(struct.pack("IHHII", 16 + len(body), 16, 2, 1, 0) + body)
    msg.decode()
    got = host.parse_links([msg])
    assert set(got) == {"s0"}
    s0 = got["s0"]
    assert s0["rx_dropped"] == 7 and s0["tx_dropped"] == 8 and s0["mtu"] == 9000
    assert s0["rx_fifo_errors"] == 15 and s0["rx_missed_errors"] == 16


def test_the_host_facts_name_mitigations_and_buffers():
    facts = host.host_config({"mtu": 1500})
    m = facts["mitigations"]
    assert m["cmdline"] and isinstance(m["vulnerabilities"], dict)
    assert "net.core.rmem_default" in facts["sysctls"] and facts["mtu"] == 1500
    assert facts["cpus"] >= 1


def test_cpu_samples_every_period():
    s = host.CpuSampler(period_s=0.05).start()
    import time

    time.sleep(0.18)
    got = s.stop()
    assert 2 <= len(got) <= 4
    t, cores = got[0]
    assert 0.04 <= t <= 0.2 and "busy" in next(iter(cores.values()))
