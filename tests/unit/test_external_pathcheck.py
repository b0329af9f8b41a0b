"""The path check's reading of frames and its verdict (pure: frames built here)."""

from __future__ import annotations

import ipaddress
import struct

from netassay.testbed import pathcheck
from netassay.testbed.external import sut_mac_on_rx

RX_MAC = "02:00:00:00:00:02"
SUT_MAC = "02:00:00:00:00:01"


def frame(dst_mac=RX_MAC, ttl=63, dst="198.19.0.2", magic=pathcheck.MAGIC, v6=False, vlan=False):
    mac = lambda m: bytes(int(x, 16) for x in m.split(":"))  # noqa: E731
    udp = struct.pack("!HHHH", 10000, 9, 30, 0) + magic + bytes(18)
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, len(udp), 17, ttl)
        ip += ipaddress.IPv6Address("2001:2:0:1::2").packed + ipaddress.IPv6Address(dst).packed
        etype = 0x86DD
    else:
        ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(udp), 0, 0, ttl, 17, 0)
        ip += ipaddress.IPv4Address("198.18.0.2").packed + ipaddress.IPv4Address(dst).packed
        etype = 0x0800
    tag = struct.pack("!HH", 0x8100, 5) if vlan else b""
    return mac(dst_mac) + mac(SUT_MAC) + tag + struct.pack("!H", etype) + ip + udp


def parsed(n, **kw):
    return [pathcheck.parse_frame(frame(**kw)) for _ in range(n)]


def test_parse_ipv4_ipv6_and_vlan():
    f = pathcheck.parse_frame(frame())
    assert f == {"dst_mac": RX_MAC, "src_mac": SUT_MAC, "ethertype": 0x0800, "ttl": 63,
                 "src": "198.18.0.2", "dst": "198.19.0.2", "probe": True}  # fmt: skip
    f6 = pathcheck.parse_frame(frame(v6=True, dst="2001:2:0:2::2", ttl=62))
    assert (f6["ttl"], f6["dst"], f6["probe"]) == (62, "2001:2:0:2::2", True)
    assert pathcheck.parse_frame(frame(vlan=True))["probe"] is True
    assert pathcheck.parse_frame(frame(magic=b"xxxx"))["probe"] is False
    assert pathcheck.parse_frame(b"\x00" * 10) is None
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    assert pathcheck.parse_frame(arp)["probe"] is False


def judge(frames, sent=100, v6=False):
    return pathcheck.judge(frames, sent, RX_MAC, "198.19.0.2", "rx0", v6)


def test_a_routed_path_passes():
    rec = judge(parsed(100))
    assert rec["ok"] and rec["came_back"] == 100 and rec["hops"] == 1
    assert "problem" not in rec
    # who sent them on: where --bidirectional's reverse direction is sent to
    assert rec["src_macs"] == {SUT_MAC: 100}
    assert sut_mac_on_rx({"path_check": rec}) == SUT_MAC
    assert sut_mac_on_rx({"path_check": judge([])}) is None
    assert sut_mac_on_rx({}) is None


def test_nothing_came_back_says_what_else_arrived():
    rec = judge([])
    assert not rec["ok"] and "nothing at all arrived" in rec["problem"]
    arp = pathcheck.parse_frame(bytes.fromhex("ffffffffffff020000000009") + b"\x08\x06" + bytes(28))
    rec = judge([arp, arp])
    assert "2 other frame(s) arrived (2 from 02:00:00:00:00:09)" in rec["problem"]


def test_wrong_mac_is_named():
    rec = judge(parsed(100, dst_mac="02:00:00:00:00:99"))
    assert not rec["ok"]
    assert "addressed to MAC 02:00:00:00:00:99, not 02:00:00:00:00:02" in rec["problem"]


def test_ttl_as_sent_means_nothing_routed():
    rec = judge(parsed(100, ttl=64))
    assert "with TTL 64, as sent (64)" in rec["problem"]
    rec6 = pathcheck.judge(parsed(100, ttl=64, v6=True, dst="2001:2:0:2::2"), 100, RX_MAC,
                    "2001:2:0:2::2", "rx0", True)  # fmt: skip
    assert "hop limit 64" in rec6["problem"]


def test_rewritten_destination_and_too_few():
    assert "addressed to 198.19.9.9" in judge(parsed(100, dst="198.19.9.9"))["problem"]
    assert "only 10 of the 100" in judge(parsed(10))["problem"]


def test_failure_is_one_line():
    err = pathcheck.failure(judge([]), "198.18.0.2", "198.19.0.2")
    assert err.exit_code == 5 and "\n" not in err.line()
    assert err.line().startswith("path check failed: none of the 100 probe frames")
