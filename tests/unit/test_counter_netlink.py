"""The in-process counter reads' parsers (``counters.netlink``), on netlink messages
pyroute2 encoded and decoded again: they keep what ``counters.snapshot``'s parsers keep
from ``ip -j -s link`` and ``tc -j -s qdisc`` (the system test compares both on a
testbed)."""

from __future__ import annotations

from typing import Any

from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from pyroute2.netlink.rtnl.tcmsg import tcmsg

from netassay.counters.netlink import link_row, qdisc_drops, xdp_prog_id
from netassay.counters.snapshot import parse_links, parse_qdisc_drops

STATS64 = {
    "rx_packets": 10, "tx_packets": 20, "rx_bytes": 640, "tx_bytes": 1280, "rx_errors": 1,
    "tx_errors": 2, "rx_dropped": 3, "tx_dropped": 4, "multicast": 0, "collisions": 0,
    "rx_length_errors": 0, "rx_over_errors": 0, "rx_crc_errors": 0, "rx_frame_errors": 0,
    "rx_fifo_errors": 0, "rx_missed_errors": 0, "tx_aborted_errors": 0,
    "tx_carrier_errors": 0, "tx_fifo_errors": 0, "tx_heartbeat_errors": 0,
    "tx_window_errors": 0, "rx_compressed": 0, "tx_compressed": 0,
}  # fmt: skip
QUEUE = {"qlen": 0, "backlog": 0, "requeues": 0, "overlimits": 0}
OLD = {"bytes": 0, "packets": 0, "overlimits": 0, "bps": 0, "pps": 0, "qlen": 0, "backlog": 0}


def wire(cls: Any, index: int, attrs: list[Any]) -> Any:
    m = cls()
    m["index"] = index
    m["attrs"] = attrs
    m["header"] = {"type": 16}
    m.encode()
    out = cls(m.data)
    out.decode()
    return out


def test_a_link_keeps_what_ip_s_link_shows():
    msg = wire(ifinfmsg, 3, [("IFLA_IFNAME", "sut0"), ("IFLA_STATS64", STATS64)])
    ip_json = [
        {"ifname": "sut0", "stats64": {
            "rx": {"bytes": 640, "packets": 10, "errors": 1, "dropped": 3},
            "tx": {"bytes": 1280, "packets": 20, "errors": 2, "dropped": 4},
        }}
    ]  # fmt: skip
    assert {"sut0": link_row(msg)} == parse_links(ip_json)
    assert xdp_prog_id(msg) is None


def test_an_xdp_program_is_found_by_its_id():
    xdp = {"attrs": [("IFLA_XDP_ATTACHED", 1), ("IFLA_XDP_PROG_ID", 42)]}
    msg = wire(ifinfmsg, 3, [("IFLA_IFNAME", "sut0"), ("IFLA_XDP", xdp)])
    assert xdp_prog_id(msg) == 42


def test_qdisc_drops_are_summed_per_device_from_either_stats_attribute():
    new = wire(tcmsg, 3, [
        ("TCA_KIND", "tbf"),
        ("TCA_STATS2", {"attrs": [("TCA_STATS_QUEUE", {**QUEUE, "drops": 7})]}),
    ])  # fmt: skip
    old = wire(tcmsg, 3, [("TCA_KIND", "pfifo"), ("TCA_STATS", {**OLD, "drop": 5})])
    other = wire(tcmsg, 4, [("TCA_KIND", "noqueue")])
    got = qdisc_drops([new, old, other], {3: "sut1", 4: "lo"})
    tc_json = [{"dev": "sut1", "drops": 7}, {"dev": "sut1", "drops": 5}, {"dev": "lo"}]
    assert got == parse_qdisc_drops(tc_json) == {"sut1": 12, "lo": 0}


def test_a_child_qdiscs_drops_are_its_parents_and_counted_once():
    """A tbf over a head-drop queue (a data plane's capped wire): the tbf reports what
    its queue dropped; summing both would count each drop twice."""
    root = wire(tcmsg, 3, [
        ("TCA_KIND", "tbf"),
        ("TCA_STATS2", {"attrs": [("TCA_STATS_QUEUE", {**QUEUE, "drops": 9})]}),
    ])  # fmt: skip
    root["parent"] = 0xFFFFFFFF
    child = wire(tcmsg, 3, [
        ("TCA_KIND", "pfifo_head_drop"),
        ("TCA_STATS2", {"attrs": [("TCA_STATS_QUEUE", {**QUEUE, "drops": 9})]}),
    ])  # fmt: skip
    child["parent"] = 0x00010001  # class 1:1 of the tbf
    tc_json = [
        {"dev": "tg0", "root": True, "drops": 9},
        {"dev": "tg0", "parent": "1:1", "drops": 9},
    ]
    assert qdisc_drops([root, child], {3: "tg0"}) == parse_qdisc_drops(tc_json) == {"tg0": 9}
