"""The data planes of --sut ovs, testpmd, l3fwd and exec, in their pure parts: their
knobs and defaults, what each refuses, their command lines, rules and route files, their
counters parsed and located, and their per-load summary."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest

from netassay import names
from netassay.config import TestbedConfig
from netassay.counters.loss import dataplane_counters, flat_deltas, flatten, locate_loss
from netassay.errors import UsageError
from netassay.shared import dataplane_counters as shared_dataplane_counters
from netassay.testbed import dataplane, dpdk, ovs, pathcheck, scale, sutexec
from netassay.trial.engine import dataplane_lag_s

MACS = {names.TG_DEV: "02:00:00:00:00:01", names.SUT_IN: "02:00:00:00:00:02",
        names.SUT_OUT: "02:00:00:00:00:03", names.SINK_DEV: "02:00:00:00:00:04"}  # fmt: skip


# -- knobs, defaults and refusals -------------------------------------------------------------
def test_each_data_plane_gets_its_own_defaults_and_no_other():
    assert TestbedConfig(sut="ovs").resolved().ovs_port == "afxdp"
    assert TestbedConfig(sut="ovs").resolved().ovs_flows == "normal"
    assert TestbedConfig(sut="ovs").resolved().ovs_rules == 0
    pmd = TestbedConfig(sut="testpmd").resolved()
    assert (pmd.testpmd_fwd, pmd.dpdk_vdev, pmd.ovs_port) == ("io", "af_xdp", None)
    l3 = TestbedConfig(sut="l3fwd").resolved()
    assert (l3.dpdk_vdev, l3.testpmd_fwd) == ("af_xdp", None)
    router = TestbedConfig().resolved()
    assert (router.ovs_port, router.testpmd_fwd, router.dpdk_vdev, router.sut_setup) == (
        None, None, None, None,
    )  # fmt: skip
    given = TestbedConfig(sut="ovs", ovs_port="system").resolved()
    assert given.ovs_port == "system"


def test_a_relative_setup_program_is_recorded_where_it_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = TestbedConfig(sut="exec", sut_setup="up.sh").resolved()
    assert cfg.sut_setup == str(tmp_path / "up.sh")


@pytest.mark.parametrize(
    ("cfg", "needle"),
    [
        (TestbedConfig(ovs_port="afxdp"), "--ovs-port with --sut router"),
        (TestbedConfig(sut="l3fwd", testpmd_fwd="mac"), "--testpmd-fwd with --sut l3fwd"),
        (TestbedConfig(sut="bridge", dpdk_vdev="af_xdp"), "--dpdk-vdev with --sut bridge"),
        (TestbedConfig(sut="ovs", sut_setup="x.sh"), "--sut-setup with --sut ovs"),
        (TestbedConfig(sut="ovs", sut_drop=0.01), "--sut-drop with --sut ovs"),
        (TestbedConfig(sut="testpmd", sut_cap_reverse_pps=1e4), "--sut-cap-reverse"),
        (TestbedConfig(sut="ovs", pinning="unpinned"), "--sut ovs with --pinning unpinned"),
        (TestbedConfig(sut="l3fwd", pinning="pin-1cpu"), "--sut l3fwd with --pinning pin-1cpu"),
        (TestbedConfig(sut="exec"), "--sut exec without --sut-setup"),
        (TestbedConfig(sut="testpmd", rx_mode="napi"), "--rx-mode napi with --sut testpmd"),
    ],
)
def test_what_a_data_plane_cannot_take_is_refused_in_one_line(cfg, needle):
    with pytest.raises(UsageError) as exc:
        dataplane.validate(cfg)
    assert needle in exc.value.line(), exc.value.line()


@pytest.mark.parametrize(
    ("cfg", "needle"),
    [
        (TestbedConfig(sut="l3fwd", routes=100), "routes of its own, not the kernel's FIB"),
        (TestbedConfig(sut="ovs", nft_rules=10), "--nft-rules with --sut ovs"),
        (TestbedConfig(sut="exec", sut_setup="x.sh", conntrack="on"), "--conntrack on with"),
    ],
)
def test_the_kernel_routers_scale_knobs_are_refused_to_a_data_plane(cfg, needle):
    with pytest.raises(UsageError) as exc:
        scale.validate(cfg)
    assert needle in exc.value.line(), exc.value.line()
    assert "\n" not in exc.value.line()


def test_dpdk_shares_its_vdev_knob_between_testpmd_and_l3fwd():
    assert dataplane._shared("l3fwd") == ("dpdk_vdev",)
    assert "dpdk_vdev" in dataplane._shared("testpmd")


def test_the_setup_program_must_exist_and_be_executable(tmp_path):
    script = tmp_path / "up.sh"
    with pytest.raises(UsageError, match="no such file"):
        sutexec.validate(TestbedConfig(sut="exec", sut_setup=str(script)))
    script.write_text("#!/bin/sh\n")
    with pytest.raises(UsageError, match="not executable"):
        sutexec.validate(TestbedConfig(sut="exec", sut_setup=str(script)))
    script.chmod(0o755)
    sutexec.validate(TestbedConfig(sut="exec", sut_setup=str(script)))


def test_routed_and_switched_data_planes_are_addressed_as_a_router_and_a_bridge():
    assert names.addressing("l3fwd", 4) == names.addressing("router", 4)
    assert names.addressing("exec", 6) == names.addressing("router", 6)
    assert names.addressing("ovs", 4) == names.addressing("bridge", 4)
    assert names.addressing("testpmd", 6) == names.addressing("bridge", 6)


def test_only_the_af_xdp_ports_put_an_xdp_program_on_sut0():
    assert dataplane.af_xdp(TestbedConfig(sut="ovs"))
    assert dataplane.af_xdp(TestbedConfig(sut="ovs", ovs_port="afxdp-nonpmd"))
    assert not dataplane.af_xdp(TestbedConfig(sut="ovs", ovs_port="system"))
    assert dataplane.af_xdp(TestbedConfig(sut="l3fwd"))
    assert not dataplane.af_xdp(TestbedConfig(sut="testpmd", dpdk_vdev="af_packet"))
    assert not dataplane.af_xdp(TestbedConfig(sut="exec", sut_setup="/x"))
    assert not dataplane.af_xdp(TestbedConfig(sut="router"))


# -- what they share --------------------------------------------------------------------------
def test_the_offload_state_is_read_from_ethtool():
    text = (
        "Features for tg0:\nrx-checksumming: on\ntx-checksumming: off\n"
        "\ttx-checksum-ipv4: off [fixed]\n"
    )
    assert dataplane.parse_offload(text, "tx-checksumming") == "off"
    assert dataplane.parse_offload(text, "rx-checksumming") == "on"
    assert dataplane.parse_offload(text, "scatter-gather") == "unknown"


def test_the_cap_is_a_policer_at_the_sinks_ingress_ahead_of_the_nft_sink():
    rules = dataplane.cap_rules(30_000, 600)
    assert 'hook ingress device "sink0" priority -20' in rules  # the nft sink's is -10
    assert "limit rate over 30000/second burst 600 packets" in rules
    assert 'counter name "na_cap" drop' in rules
    d = {"sink/nft/na_cap/packets": 7, "sink/nft/na_rx/packets": 93}
    assert locate_loss(100, 100, 93, d)["sut_egress"] == 7  # the SUT's, not the sink's


def test_the_cap_of_a_data_plane_at_the_sink_needs_the_nft_sink():
    with pytest.raises(UsageError, match="add --sink nft"):
        dataplane.validate(TestbedConfig(sut="testpmd", sut_cap_pps=30_000, sink="xdp"))


# -- Open vSwitch -----------------------------------------------------------------------------
def test_ovs_forwarding_rules_normal_or_per_port_and_the_meter_on_the_forward_one():
    assert ovs.forwarding_rules("normal", False) == ["priority=0,actions=NORMAL"]
    metered = ovs.forwarding_rules("normal", True)
    assert metered[1] == "priority=1,in_port=sut0,actions=meter:1,NORMAL"
    assert ovs.forwarding_rules("ports", False) == [
        "priority=1,in_port=sut0,actions=output:sut1",
        "priority=1,in_port=sut1,actions=output:sut0",
    ]
    assert (
        ovs.forwarding_rules("ports", True)[0]
        == "priority=1,in_port=sut0,actions=meter:1,output:sut1"
    )


@pytest.mark.parametrize("ip", [4, 6])
def test_the_extra_rules_are_distinct_and_never_match_a_test_frame(ip):
    rules = ovs.extra_rules(70_000, ip)
    assert len(rules) == len(set(rules)) == 70_000
    a = names.addressing("ovs", ip)
    field = "ipv6_dst" if ip == 6 else "nw_dst"
    dsts = {ipaddress.ip_address(re.search(rf"{field}=([^,]+)", r).group(1)) for r in rules}
    assert len(dsts) == 2  # 65536 ports per address
    net = names.BENCH_V6 if ip == 6 else names.BENCH_V4
    assert all(d in net for d in dsts)
    assert ipaddress.ip_address(a.sink) not in dsts and ipaddress.ip_address(a.tg) not in dsts
    assert all(r.startswith(f"priority={ovs.RULE_PRIORITY},udp") and r.endswith("actions=drop")
               for r in rules)  # fmt: skip


DUMP_PORTS = """OFPST_PORT reply (OF1.4) (xid=0x2): 3 ports
  port  1: rx pkts=0, bytes=0, drop=?, errs=?, frame=?, over=?, crc=?
           tx pkts=54338, bytes=2716900, drop=12, errs=?, coll=?
           duration=14.200s
           CUSTOM Statistics
                      xsk_queue_0_rx_dropped=0, xsk_queue_0_rx_invalid_descs=0,
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=0, errs=0, coll=0
           duration=14.176s
  port  2: rx pkts=119918, bytes=5995900, drop=4397, errs=?, frame=?, over=?, crc=?
           tx pkts=0, bytes=0, drop=?, errs=?, coll=?
           duration=13.489s
           CUSTOM Statistics
                      xsk_queue_0_rx_dropped=4398, xsk_queue_0_rx_invalid_descs=0,
"""
METER_STATS = """OFPST_METER reply (OF1.3) (xid=0x2):
meter:1 flow_count:1 packet_in_count:115520 byte_in_count:7393280 duration:13.492s bands:
0: packet_count:61182 byte_count:3915648
"""


def test_ovs_port_and_meter_statistics_are_read_as_counters():
    c = ovs.parse_dump_ports(DUMP_PORTS, {1: "sut1", 2: "sut0"})
    assert c["sut0/rx_pkts"] == 119918 and c["sut0/rx_drop"] == 4397
    assert c["sut0/xsk_queue_0_rx_dropped"] == 4398
    assert c["sut1/tx_pkts"] == 54338 and c["sut1/tx_drop"] == 12
    assert "sut0/rx_errs" not in c  # '?': a count OVS does not keep
    assert c["local/rx_drop"] == 0
    m = ovs.parse_meter_stats(METER_STATS)
    assert m == {"meter1/packets_in": 115520, "meter1/band0_dropped": 61182}
    # only what no kernel counter sees: sut1's transmit drops and the meter's
    assert ovs.drops({**c, **m}, metered=True) == {
        "sut_ingress": 0, "sut_forward": 0, "sut_egress": 12 + 61182,
    }  # fmt: skip
    assert ovs.drops(c, metered=False)["sut_egress"] == 12


COVERAGE = """Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=4e1b0f2a:
bridge_reconfigure         0.0/sec     0.000/sec        0.0000/sec   total: 4
datapath_drop_meter      917.0/sec    76.417/sec        1.2736/sec   total: 4585
drop_action_of_pipeline  915.6/sec    76.300/sec        1.2717/sec   total: 4578
datapath_drop_upcall_error   0.0/sec     0.000/sec        0.0000/sec   total: 3
netdev_sent              4000.0/sec  3333.333/sec       55.5556/sec   total: 200000
126 events never hit
"""


def test_ovs_datapath_drops_by_its_own_count_are_the_suts_forwarding():
    """Open vSwitch's coverage counters: its pipeline's drops and its other drop reasons
    (the meter's left to its own statistics, no other counter summed) are frames it
    dropped by its own count, located at the SUT's forwarding; a reading never hit is
    0, so that a trial's delta is never lost to a counter that first appears after it."""
    c = ovs.parse_coverage(COVERAGE)
    assert c == {"datapath/pipeline_drops": 4578, "datapath/other_drops": 3}
    assert ovs.parse_coverage("Event coverage, ...:\n126 events never hit\n") == {
        "datapath/pipeline_drops": 0, "datapath/other_drops": 0,
    }  # fmt: skip
    assert ovs.drops(c, metered=False) == {"sut_ingress": 0, "sut_forward": 4581, "sut_egress": 0}
    before, after = ({"dataplane": {"counters": {"datapath/pipeline_drops": n},
                                    "drops": ovs.drops({"datapath/pipeline_drops": n}, False)}}
                     for n in (10, 510))  # fmt: skip
    d, _ = flat_deltas(flatten(before), flatten(after))
    loc = locate_loss(20_000, 20_000, 19_500, d)
    assert loc["sut_forward"] == 500 and loc["unaccounted"] == 0


def test_a_trial_waits_for_a_data_planes_counters_that_lag():
    """A trial whose loss is not yet accounted for reads again no sooner than its data
    plane's counters may lag (Open vSwitch's coverage: a second); others do not wait."""
    assert dataplane_lag_s({"dataplane": {"counters": {}, "lag_s": ovs.COVERAGE_LAG_S}}) == 1.1
    assert dataplane_lag_s({"dataplane": {"counters": {}}}) == 0.0
    assert dataplane_lag_s({}) == 0.0


# -- DPDK -------------------------------------------------------------------------------------
def test_dpdk_runs_without_hugepages_on_the_suts_cpu_and_its_veths():
    eal = dpdk.eal_args("t1", 1, "af_xdp", 2)
    assert eal[:4] == ["--no-huge", "-m", "512", "--no-pci"]
    assert eal[eal.index("--file-prefix") + 1] == "netassay-t1"
    assert eal[eal.index("--lcores") + 1] == "0@1,1@1"
    assert "net_af_xdp0,iface=sut0,start_queue=0,queue_count=1" in eal
    assert "net_af_xdp1,iface=sut1,start_queue=0,queue_count=1" in eal
    assert "net_af_packet1,iface=sut1,qpairs=1" in dpdk.eal_args("t1", 1, "af_packet", 1)


def test_testpmd_forwards_io_or_mac_to_the_next_hops():
    io = dpdk.testpmd_argv("t1", TestbedConfig(sut="testpmd").resolved(), 1, MACS)
    assert "--forward-mode=io" in io and "--total-num-mbufs=16384" in io
    assert not [a for a in io if a.startswith("--eth-peer")]
    mac = dpdk.testpmd_argv("t1", TestbedConfig(sut="testpmd", testpmd_fwd="mac"), 1, MACS)
    assert "--forward-mode=mac" in mac
    assert (
        f"--eth-peer=1,{MACS[names.SINK_DEV]}" in mac
        and f"--eth-peer=0,{MACS[names.TG_DEV]}" in mac
    )


@pytest.mark.parametrize("ip", [4, 6])
def test_l3fwd_routes_the_generators_prefix_to_port_0_and_the_sinks_to_port_1(ip):
    v4, v6 = dpdk.routes(names.addressing("l3fwd", ip))
    assert v4 == "R198.18.0.0/24 0\nR198.19.0.0/24 1\n"
    assert v6 == "R2001:2:0:1::/64 0\nR2001:2:0:2::/64 1\n"


def test_l3fwd_is_given_its_routes_and_static_next_hops(tmp_path, monkeypatch):
    built = tmp_path / dpdk.L3FWD
    built.write_text("")
    built.chmod(0o755)
    monkeypatch.setattr(dpdk, "l3fwd_candidates", lambda: [built])
    files = (Path("/r4"), Path("/r6"))
    argv = dpdk.l3fwd_argv("t1", TestbedConfig(sut="l3fwd").resolved(), 1, MACS, files)
    assert argv[0] == str(built)
    assert "--rule_ipv4=/r4" in argv and "--rule_ipv6=/r6" in argv
    assert f"--eth-dest=1,{MACS[names.SINK_DEV]}" in argv and "--config=(0,0,0),(1,0,0)" in argv
    # its AF_XDP rings the socket's default, as testpmd's and as the testbed records them
    ring = argv.index("--rx-queue-size")
    assert argv[ring + 1] == str(dataplane.XSK_RING) == "2048" and "--tx-queue-size" in argv
    packet = TestbedConfig(sut="l3fwd", dpdk_vdev="af_packet").resolved()
    assert "--rx-queue-size" not in dpdk.l3fwd_argv("t1", packet, 1, MACS, files)


def test_dpdk_port_statistics_and_the_drops_only_it_sees():
    stats = {
        "sut0": {"ipackets": 94665, "imissed": 5335, "oerrors": 0, "q_ipackets": [94665, 0]},
        "sut1": {"opackets": 94660, "oerrors": 5, "imissed": 0},
    }
    c = dpdk.flatten_stats(stats)
    assert c == {"sut0/ipackets": 94665, "sut0/imissed": 5335, "sut0/oerrors": 0,
                 "sut1/opackets": 94660, "sut1/oerrors": 5, "sut1/imissed": 0}  # fmt: skip
    # over af_xdp sut0's misses are the veth's rx_dropped too; over af_packet only DPDK's
    assert dpdk.drops(c, "af_xdp") == {"sut_ingress": 0, "sut_forward": 0, "sut_egress": 5}
    assert dpdk.drops(c, "af_packet")["sut_ingress"] == 5335


# -- the user's own ---------------------------------------------------------------------------
def test_the_setup_program_is_told_where_it_runs(tmp_path):
    site = dataplane.Site(
        name="t1", cfg=TestbedConfig(sut="exec", sut_setup="/x"),
        ns={r: f"na-t1-{r}" for r in names.ROLES}, macs=MACS,
        addressing=names.addressing("exec", 4), sut_cpu=1, run_dir=tmp_path,
    )  # fmt: skip
    env = sutexec.environment_of(site)
    assert env["NETASSAY_NETNS"] == "na-t1-sut"
    assert (env["NETASSAY_IN_DEV"], env["NETASSAY_OUT_DEV"]) == ("sut0", "sut1")
    assert (env["NETASSAY_IN_ADDR"], env["NETASSAY_OUT_ADDR"]) == ("198.18.0.1", "198.19.0.1")
    assert (
        env["NETASSAY_SINK_MAC"] == MACS[names.SINK_DEV]
        and env["NETASSAY_SINK_ADDR"] == "198.19.0.2"
    )
    assert (env["NETASSAY_CPU"], env["NETASSAY_IP_VERSION"], env["NETASSAY_PREFIX_LEN"]) == (
        "1", "4", "24",
    )  # fmt: skip


def test_a_users_command_is_told_how_to_reach_the_data_plane(tmp_path):
    """A hook's or a change's environment: the data plane's run directory, Open
    vSwitch's own directories (its tools then need no option), DPDK's file prefix, the
    setup program's directory; nothing for a SUT netassay builds itself."""

    def state(sut: str) -> dict:
        dp = {"sut": sut, "run_dir": str(tmp_path)}
        return {"name": "t1", "config": {"sut": sut}, "dataplane": dp}

    ovs_env = dataplane.command_env(state("ovs"))
    assert ovs_env["NETASSAY_DP_DIR"] == str(tmp_path)
    assert {k: v for k, v in ovs_env.items() if k.startswith("OVS_")} == {
        f"OVS_{d}DIR": str(tmp_path / "ovs") for d in ("RUN", "LOG", "DB", "SYSCONF")
    }
    for sut in ("testpmd", "l3fwd"):
        assert dataplane.command_env(state(sut))["NETASSAY_DPDK_PREFIX"] == dpdk.prefix("t1")
    assert dataplane.command_env(state("exec"))["NETASSAY_DIR"] == str(tmp_path / sutexec.WORKDIR)
    assert dataplane.command_env({"name": "t1", "config": {"sut": "router"}}) == {}


# -- counted and located ----------------------------------------------------------------------
def _d(**kw: int) -> dict[str, int]:
    return {k.replace("__", "/"): v for k, v in kw.items()}


def test_a_data_planes_counters_are_flattened_and_its_own_drops_located():
    snap = {"dataplane": {"counters": {"sut0/rx_pkts": 10}, "drops": {"sut_egress": 3}}}
    assert flatten(snap) == {"sut/dp/sut0/rx_pkts": 10, "sut/dpdrop/sut_egress": 3}
    d = {"sut/dpdrop/sut_ingress": 0, "sut/dpdrop/sut_forward": 0, "sut/dpdrop/sut_egress": 3,
         "sut/dp/sut1/tx_drop": 3, "sink/xdp/packets": 97}  # fmt: skip
    loc = locate_loss(100, 100, 97, d)
    assert loc["sut_egress"] == 3 and loc["unaccounted"] == 0
    assert dataplane_counters(d) == {"sut1/tx_drop": 3}


def test_the_head_drop_wire_of_a_data_plane_is_its_receive_ring():
    """An AF_XDP data plane's wire drops are its ring overflowing (the SUT's ingress),
    as the XDP router's; without a data plane they stay the generator's egress."""
    dp = {"sut/dpdrop/sut_ingress": 0, "sut/dpdrop/sut_egress": 0, "tg/qdisc/tg0/drops": 40}
    assert locate_loss(1000, 1000, 960, dp)["sut_ingress"] == 40
    assert locate_loss(1000, 1000, 960, {"tg/qdisc/tg0/drops": 40})["gen_egress"] == 40


def test_a_switched_data_planes_path_passes_the_check_with_the_ttl_as_sent():
    frame = {"probe": True, "dst_mac": "02:00:00:00:00:04", "src_mac": "02:00:00:00:00:01",
             "ttl": pathcheck.SENT_TTL, "dst": "198.19.0.2"}  # fmt: skip
    args = ([frame] * 100, 100, "02:00:00:00:00:04", "198.19.0.2", "sink0", False)
    assert pathcheck.judge(*args, routed=False)["ok"]
    assert "nothing routed them" in pathcheck.judge(*args)["problem"]


def test_the_per_load_summary_sums_netassays_counts_and_the_data_planes():
    a = shared_dataplane_counters.AtLoad(20_000)
    a.add(20_000, 19_990, {"sut_ingress": 10, "unsent": 0}, {"sut/dp/sut0/rx_pkts": 20_000})
    a.add(20_000, 20_000, {}, {"sut/dp/sut0/rx_pkts": 20_000, "sut/dp/sut0/rx_bytes": 1})
    doc = a.to_json()
    assert (doc["runs"], doc["sent"], doc["received"]) == (2, 40_000, 39_990)
    assert doc["loss_location"] == {"sut_ingress": 10}
    assert doc["sut_counters"] == {"sut0/rx_bytes": 1, "sut0/rx_pkts": 40_000}
    lines = shared_dataplane_counters.json_lines({"sut": "ovs", "loads": [doc]})
    assert lines[0].startswith("Open vSwitch's own counters")
    assert "sut_ingress 10" in lines[2] and "sut0/rx_pkts 40,000" in lines[2]
    assert "rx_bytes" not in lines[2]  # bytes are left to the JSON
    assert len(lines) == 3  # no drop of the data plane's own count: no note
    a.add(20_000, 19_500, {"sut_forward": 500}, {"sut/dp/datapath/pipeline_drops": 500})
    lines = shared_dataplane_counters.json_lines({"sut": "ovs", "loads": [a.to_json()]})
    assert "sut_forward 510" not in lines[2] and "sut_forward 500" in lines[2]
    assert "datapath/pipeline_drops 500" in lines[2]
    assert (
        lines[3] == f"  ({shared_dataplane_counters.OWN_DROPS_NOTE})"
        and "dropped in the data plane" in lines[3]
    )


def test_an_unbuilt_l3fwd_or_a_missing_dpdk_driver_says_what_to_install(tmp_path, monkeypatch):
    """l3fwd not built (no netassay-l3fwd where make setup puts it): one line naming
    make setup; a vdev's driver absent (its Debian package not installed): one line
    naming that package. Both exit as a missing tool."""
    from netassay.errors import ToolError

    monkeypatch.setattr(dpdk, "l3fwd_candidates", lambda: [tmp_path / "bin" / dpdk.L3FWD])
    with pytest.raises(ToolError) as exc:
        dpdk.validate(TestbedConfig(sut="l3fwd"))
    assert exc.value.exit_code == 8
    assert exc.value.line() == (
        f"l3fwd is not built: no netassay-l3fwd in {tmp_path / 'bin'}; run 'make setup' "
        "(it builds l3fwd from dpdk-doc's examples with dpdk-dev)"
    )
    monkeypatch.setattr(dpdk, "PMDS", tmp_path / "lib" / "dpdk")  # no driver there
    for vdev, pkg in (("af_xdp", "librte-net-af-xdp23"), ("af_packet", "librte-net-af-packet23")):
        with pytest.raises(ToolError) as exc:
            dpdk.validate(TestbedConfig(sut="testpmd", dpdk_vdev=vdev))
        assert exc.value.line().endswith(
            f"install Debian's {pkg} (apt-get install {pkg}) or run 'make setup'"
        )
        assert f"DPDK's net_{vdev} driver is not installed" in exc.value.line()


def test_an_experiment_records_a_data_planes_cap_with_its_own_bucket():
    """The bucket a cap's bound is judged with (``lab.installed_caps``) is the one the
    data plane's cap has: the AF_XDP ring's 2048 frames at 30 kpps, not the kernel
    policer's 600; the router's stays 20 ms of its cap."""
    from netassay.shared import lab

    ovs_md = lab.testbed_metadata(TestbedConfig(sut="ovs", sut_cap_pps=30_000), {})
    assert ovs_md["sut_cap_bucket_pkts"] == dataplane.XSK_RING == 2048
    assert [c.bucket_pkts for c in lab.installed_caps(ovs_md, False)] == [2048]
    big = lab.testbed_metadata(TestbedConfig(sut="testpmd", sink="nft", sut_cap_pps=200_000), {})
    assert big["sut_cap_bucket_pkts"] == 4000  # 20 ms of the cap, more than the ring
    router = lab.testbed_metadata(TestbedConfig(sut="router", sut_cap_pps=30_000), {})
    assert router["sut_cap_bucket_pkts"] == 600


def test_the_flow_table_size_is_read_from_ovs_ofctls_aggregate():
    reply = "OFPST_AGGREGATE reply (OF1.3) (xid=0x2): packet_count=0 byte_count=0 flow_count=10003"
    assert ovs.table_flows(reply + "\n") == 10_003
    assert ovs.table_flows("") is None


def test_ovs_rules_take_counts_with_suffixes_and_a_list_makes_a_series():
    from netassay.shared.scale import KNOBS, is_list, parse_list

    assert "ovs_rules" in KNOBS and is_list("0,1k,10k")
    assert parse_list("0,1k,10k", "--ovs-rules") == [0, 1_000, 10_000]


def test_reconfigs_view_shows_the_data_planes_own_counters_beside_each_trial():
    """Each reconfig trial through a data plane: its own counters under the loss
    location, and what its own drop counters mean when they counted any."""
    from dataclasses import replace
    from types import SimpleNamespace

    from netassay.methods.reconfig import view as reconfig_view
    from netassay.methods.reconfig.store import ReconfigSummary, ReconfigTrial, StoredReconfig

    own = {"datapath/pipeline_drops": 4_000, "sut0/rx_bytes": 9}
    trial = ReconfigTrial(trial=0, lost=4_000, blocked_s=0.2, change_s=0.25,
                          loss_location={"sut_forward": 4_000}, excluded=None,
                          sut_counters=own)  # fmt: skip
    summary = ReconfigSummary(
        trials=1, lost=4_000, mean_blocked_s=0.2, ci95_blocked_s=None, min_blocked_s=0.2,
        max_blocked_s=0.2, change="sh b.sh", undo=None, rate="20k", rate_pps=20_000.0,
        rate_from=None, duration_s=3.0, at_s=0.5, trials_planned=1, trials_stored=1,
        trials_excluded=0, per_trial=[trial],
    )  # fmt: skip
    exp = SimpleNamespace(label="reconfig", id=1, kind="reconfig")
    lines = reconfig_view.lines(StoredReconfig(Path("x.db"), exp, summary))  # type: ignore[arg-type]
    at = next(i for i, x in enumerate(lines) if x.startswith("  trial 1:"))
    assert "at sut_forward 4,000" in lines[at]
    assert lines[at + 1] == "    the SUT's own counters: datapath/pipeline_drops 4,000"
    assert lines[at + 2] == f"    ({shared_dataplane_counters.OWN_DROPS_NOTE})"
    assert "sut_counters" in trial.to_json()
    bare = replace(summary, per_trial=[replace(trial, sut_counters={})])
    assert not any(
        "own counters" in x for x in reconfig_view.lines(StoredReconfig(Path("x"), exp, bare))
    )  # type: ignore[arg-type]
    # as JSON, a trial without a data plane's counters has none (not an empty map)
    assert "sut_counters" not in bare.to_json()["per_trial"][0]
