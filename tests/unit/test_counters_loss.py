"""Counter arithmetic and loss location, against hand-computed values."""

from __future__ import annotations

import pytest

from netassay.counters.loss import (
    LOCATIONS,
    accounted_for,
    counter_delta,
    flat_deltas,
    flatten,
    locate_loss,
    main_location,
    wrap_bits,
)
from netassay.counters.snapshot import (
    parse_links,
    parse_nft_counters,
    parse_nft_set,
    parse_qdisc_drops,
    parse_snmp,
    parse_softnet,
)


def test_delta_plain():
    assert counter_delta(10, 25) == (15, None)
    assert counter_delta(7, 7) == (0, None)


def test_delta_wraps_32_bit():
    d, warn = counter_delta(0xFFFF_FFF0, 0x10, bits=32)
    assert d == 0x20
    assert "wrapped" in warn


def test_delta_wraps_64_bit():
    d, warn = counter_delta(2**64 - 5, 5)
    assert d == 10
    assert "64-bit" in warn


def test_delta_reset_is_unknown_not_huge():
    d, warn = counter_delta(1_000_000, 3, bits=32)
    assert d == 0
    assert "reset" in warn


def test_flat_deltas_reports_warnings_with_key():
    before = {"host/softnet/cpu0/dropped": 0xFFFF_FFFF, "a": 1, "gone": 4}
    after = {"host/softnet/cpu0/dropped": 1, "a": 3, "new": 9}
    d, warns = flat_deltas(before, after, wrap_bits(before))
    assert d == {"host/softnet/cpu0/dropped": 2, "a": 2}
    assert warns == ["host/softnet/cpu0/dropped: counter wrapped (32-bit): 4294967295 -> 1"]


def test_locate_loss_splits_backlog_drops_without_double_counting():
    # A backlog drop at the SUT shows up twice: tg0 tx_dropped and sut0 rx_dropped
    # (the numbers of the trafgen run through a real pin-2cpu testbed).
    d = {
        "tg/link/tg0/tx_dropped": 29836,
        "sut/link/sut0/rx_dropped": 29836,
        "sut/link/sut1/tx_dropped": 5650,
        "sink/link/sink0/rx_dropped": 5650,
        "host/softnet/cpu1/dropped": 35486,
    }
    loc = locate_loss(1_000_000, 1_000_000, 964_514, d)
    assert loc == {
        "unsent": 0,
        "gen_egress": 0,
        "sut_ingress": 29836,
        "sut_forward": 0,
        "sut_egress": 0,
        "sink_ingress": 5650,
        "sink_socket": 0,
        "unaccounted": 0,
    }
    assert set(loc) == set(LOCATIONS)
    assert main_location(loc) == "sut_ingress"


def test_locate_loss_ground_truth_and_cap_and_unsent():
    d = {
        "sut/nft/na_drop/packets": 500,
        "sut/nft/na_cap/packets": 2000,
        "sut/snmp/Ip/OutNoRoutes": 3,
        "tg/link/tg0/tx_dropped": 7,  # not seen by the SUT: generator side
        "sut/qdisc/sut1/drops": 11,
    }
    loc = locate_loss(100_000, 99_000, 99_000 - 2521 - 10, d)
    assert loc["unsent"] == 1000
    assert loc["sut_forward"] == 503
    assert loc["sut_egress"] == 2011
    assert loc["gen_egress"] == 7
    assert loc["unaccounted"] == 10
    assert main_location(loc) == "sut_egress"


def test_locate_loss_ipv6_mib():
    d = {"sut/snmp/Ip6/Ip6InNoRoutes": 4, "sut/snmp/Ip6/Ip6OutDiscards": 1}
    d["sut/snmp/Ip/InDiscards"] = 99  # IPv4 MIB is ignored on an IPv6 testbed
    loc = locate_loss(10, 10, 5, d, ip_version=6)
    assert loc["sut_forward"] == 5
    assert loc["unaccounted"] == 0


def test_main_location_none_without_loss():
    assert main_location({"unsent": 5, "sut_ingress": 0}) is None


def test_parsers_on_real_kernel_text():
    softnet = (
        "0003cac6 00000000 00000000 00000000 00000000 00000000\n"
        "0061a2af 00011618 00000002 00000000 00000000 00000000\n"
    )
    assert parse_softnet(softnet) == [[0x3CAC6, 0, 0], [0x61A2AF, 0x11618, 2]]
    snmp = (
        "Ip: Forwarding DefaultTTL InReceives InHdrErrors\n"
        "Ip: 1 64 200000 3\n"
        "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n"
        "Udp: 5 0 0 6 2\n"
        "Ip6InReceives                   \t17\n"
        "Ip6InNoRoutes                   \t3\n"
    )
    s = parse_snmp(snmp)
    assert s["Ip"]["InReceives"] == 200000
    assert s["Ip"]["InHdrErrors"] == 3
    assert s["Udp"]["RcvbufErrors"] == 2
    assert s["Ip6"] == {"Ip6InReceives": 17, "Ip6InNoRoutes": 3}


def test_parse_links_qdisc_nft():
    links = [
        {
            "ifname": "sut0",
            "stats64": {
                "rx": {"packets": 10, "dropped": 2, "errors": 0},
                "tx": {"packets": 1, "dropped": 0, "errors": 0},
            },
        }
    ]
    assert parse_links(links)["sut0"]["rx_dropped"] == 2
    assert parse_qdisc_drops([{"dev": "sut1", "drops": 4}, {"dev": "sut1", "drops": 1}]) == {
        "sut1": 5
    }
    doc = {
        "nftables": [
            {"metainfo": {"version": "1.0.6"}},
            {"counter": {"family": "netdev", "name": "na_rx", "packets": 1000, "bytes": 4}},
        ]
    }
    assert parse_nft_counters(doc) == {"na_rx": 1000}
    flows = {
        "nftables": [
            {
                "set": {
                    "name": "na_flows",
                    "elem": [
                        {
                            "elem": {
                                "val": {"concat": ["198.18.0.2", 10000, 9]},
                                "counter": {"packets": 7, "bytes": 1},
                            }
                        }
                    ],
                }
            }
        ]
    }
    assert parse_nft_set(flows) == {"198.18.0.2|10000|9": 7}


def test_flatten_keys():
    snap = {
        "softnet": [[1, 2, 3]],
        "ns": {
            "sut": {
                "links": {"sut0": {"rx_dropped": 4}},
                "snmp": {"Ip": {"InDiscards": 5}},
                "qdisc_drops": {"sut1": 6},
                "nft": {"na_drop": 7},
            }
        },
    }
    flat = flatten(snap)
    assert flat == {
        "host/softnet/cpu0/processed": 1,
        "host/softnet/cpu0/dropped": 2,
        "host/softnet/cpu0/squeezed": 3,
        "sut/link/sut0/rx_dropped": 4,
        "sut/snmp/Ip/InDiscards": 5,
        "sut/qdisc/sut1/drops": 6,
        "sut/nft/na_drop/packets": 7,
    }
    assert wrap_bits(flat) == {k: 32 for k in flat if k.startswith("host/")}


@pytest.mark.parametrize("bits", [32, 64])
def test_wrap_then_delta_is_exact_for_any_start(bits):
    top = 1 << bits
    for start in (0, 1, top // 2 - 1, top - 1):
        after = (start + 12345) % top
        assert counter_delta(start, after, bits)[0] == 12345


def test_retried_sends_are_not_lost_and_the_split_balances():
    # The wire's qdisc refused 500 sends; the generator retried all 500: nothing is lost
    # there. Before, they were booked at the generator's egress and 'unaccounted' went
    # to -500 (hidden by the report).
    d = {"tg/qdisc/tg0/drops": 500, "sut/link/sut0/rx_dropped": 40, "tg/link/tg0/tx_dropped": 40}
    loc = locate_loss(10_000, 10_000, 9_960, d, retries=500)
    assert loc["gen_egress"] == 0 and loc["sut_ingress"] == 40 and loc["unaccounted"] == 0
    assert sum(v for k, v in loc.items() if k != "unsent") == 10_000 - 9_960
    # qdisc drops the generator did not retry are lost at its egress
    loc = locate_loss(10_000, 10_000, 9_950, {"tg/qdisc/tg0/drops": 60}, retries=10)
    assert loc["gen_egress"] == 50 and loc["unaccounted"] == 0


def test_sink_refusals_are_located_at_the_sink_in_both_sink_modes():
    from netassay.counters.loss import sink_counts_disagree, sink_ingress_drops

    # full stack sink: the sink's backlog refused 259 (seen on both sides of the veth)
    nft = {"sut/link/sut1/tx_dropped": 259, "sink/link/sink0/rx_dropped": 259}
    # XDP sink: its ring refused 120 (seen only as the SUT egress veth's tx_dropped)
    xdp = {"sut/link/sut1/tx_dropped": 120}
    for d, n in ((nft, 259), (xdp, 120)):
        loc = locate_loss(100_000, 100_000, 100_000 - n, d)
        assert loc["sink_ingress"] == n and loc["sut_egress"] == 0 and loc["unaccounted"] == 0
        assert sink_ingress_drops(d) == n and not sink_counts_disagree(d)
    assert sink_counts_disagree({"sut/link/sut1/tx_dropped": 9, "sink/link/sink0/rx_dropped": 7})


def test_xdp_sink_count_is_flattened():
    flat = flatten({"sink_xdp": {"packets": 42}, "ns": {}})
    assert flat == {"sink/xdp/packets": 42}


def test_a_trial_is_accounted_for_only_when_every_frame_is_received_or_counted():
    capped = {"sut/nft/na_cap/packets": 300}
    assert accounted_for(locate_loss(1000, 1000, 700, capped))  # dropped by the cap
    assert accounted_for(locate_loss(1000, 1000, 1000, {}))  # all arrived
    # 5 frames neither arrived nor dropped: maybe still in flight, wait for them
    assert not accounted_for(locate_loss(1000, 1000, 695, capped))
    # the counters explain more drops than frames were lost: a foreign drop may hide one
    assert not accounted_for(locate_loss(1000, 1000, 705, capped))
    # frames the generator never sent are not in flight
    assert accounted_for(locate_loss(1000, 990, 990, {}))
