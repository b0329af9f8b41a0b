"""The kernel router at scale (testbed.scale): where the routes and rules go, what is
refused; the SUT's own counts (counters.sutstate); scale series (shared.scale)."""

from __future__ import annotations

import ipaddress
from dataclasses import replace

import pytest

from netassay import names
from netassay.config import TestbedConfig, count_in
from netassay.counters import sutstate
from netassay.counters.loss import flatten, locate_loss
from netassay.errors import UsageError
from netassay.shared import lab
from netassay.shared import scale as shared_scale
from netassay.store.db import Experiment
from netassay.testbed import scale as testbed_scale
from netassay.units import parse_whole


@pytest.mark.parametrize(
    ("ip", "routes", "step", "plen", "first_dst"),
    [
        (4, 1, 256, 24, "198.19.1.1"),
        (4, 255, 256, 24, "198.19.1.1"),
        (4, 256, 128, 25, "198.19.1.1"),
        (4, 1000, 64, 26, "198.19.1.1"),
        (4, 65_280, 1, 32, "198.19.1.0"),
        (6, 1, 1 << 16, 112, "2001:2:0:8000::1"),
        (6, 100_000, 1 << 15, 113, "2001:2:0:8000::1"),
        (6, 1_000_000, 4096, 116, "2001:2:0:8000::1"),
    ],
)
def test_routes_are_prefixes_of_their_own_back_to_back(ip, routes, step, plen, first_dst):
    f = testbed_scale.fib(ip, routes)
    assert (f.step, f.prefix_len, f.first_dst) == (step, plen, first_dst)
    last = ipaddress.ip_network(f.prefix(routes - 1))
    bench = names.BENCH_V4 if ip == 4 else names.BENCH_V6
    # every route inside the benchmarking range, none on the sink's link
    assert last.subnet_of(bench) and last.prefixlen == plen  # type: ignore[arg-type]
    first = ipaddress.ip_network(f.prefix(0))
    sink_link = ipaddress.ip_network("198.19.0.0/24" if ip == 4 else "2001:2:0:2::/64")
    assert not first.overlaps(sink_link) and not last.overlaps(sink_link)  # type: ignore[arg-type]
    assert int(last.network_address) - int(first.network_address) == (routes - 1) * step


def test_more_routes_than_ipv4_has_room_for_say_so_in_one_line():
    with pytest.raises(UsageError) as e:
        testbed_scale.fib(4, 65_281)
    line = e.value.line()
    assert "room for 1..65,280 routes" in line and "--ip 6" in line and "\n" not in line
    with pytest.raises(UsageError):
        testbed_scale.fib(6, 1_000_001)


def test_route_lines_are_one_ip_batch_line_per_route():
    f = testbed_scale.fib(4, 3)
    assert list(testbed_scale.route_lines(f, "198.19.0.2", "sut1")) == [
        f"route add 198.19.{i}.0/24 via 198.19.0.2 dev sut1" for i in (1, 2, 3)
    ]
    six = list(testbed_scale.route_lines(testbed_scale.fib(6, 3), "2001:2:0:2::2", "sut1"))
    assert six[-1] == "route add 2001:2:0:8000::2:0/112 via 2001:2:0:2::2 dev sut1"
    assert testbed_scale.fib(6, 1_000_000).prefix(999_999) == "2001:2:0:8000::f423:f000/116"


@pytest.mark.parametrize("ip", [4, 6])
def test_rule_keys_are_distinct_and_match_no_flow(ip):
    keys = list(testbed_scale.rule_keys(ip, 70_000))  # past IPv4's 65,280 sources of one port
    assert len(set(keys)) == 70_000
    flows = ipaddress.ip_network("198.18.0.0/24" if ip == 4 else "2001:2:0:1::/64")
    bench = names.BENCH_V4 if ip == 4 else names.BENCH_V6
    for addr, port in keys[:1000] + keys[-1000:]:
        a = ipaddress.ip_address(addr)
        assert a in bench and a not in flows and port >= 1


def test_linear_rules_and_the_set_hold_the_same_keys():
    linear = testbed_scale.rules_text(4, 3, as_set=False)
    assert linear.count("ip saddr 198.18.1.") == 3 and "@na_block" not in linear
    assert linear.count('counter name "na_blocked" drop') == 3
    assert 'counter name "na_passed" accept' in linear
    as_set = testbed_scale.rules_text(4, 3, as_set=True)
    assert "elements = { 198.18.1.0 . 1, 198.18.1.1 . 1, 198.18.1.2 . 1 }" in as_set
    assert as_set.count("drop") == 1  # one rule: the set's lookup
    assert "ip6 saddr . udp dport @na_block" in testbed_scale.rules_text(6, 2, as_set=True)


@pytest.mark.parametrize(
    ("knobs", "said"),
    [
        ({"sut": "bridge", "routes": 10}, "--routes with --sut bridge"),
        ({"sut": "xdp-router", "nft_rules": 10}, "--nft-rules with --sut xdp-router"),
        ({"sut": "bridge", "conntrack": "on"}, "--conntrack on with --sut bridge"),
        ({"nft_set": True}, "--nft-set without --nft-rules"),
        ({"nat": "snat"}, "--nat snat with --conntrack off"),
        ({"conntrack_max": 1 << 20}, "--conntrack-max with --conntrack off"),
        ({"count_flows": True, "sink": "nft"}, "--count-flows with --sink nft"),
        ({"routes": 70_000}, "--routes 70,000 with IPv4"),
        ({"flows": 1_000_001}, "bad flow count 1,000,001"),
    ],
)
def test_scale_knobs_a_sut_cannot_have_are_refused(knobs, said):
    with pytest.raises(UsageError) as e:
        testbed_scale.validate(replace(TestbedConfig(), **knobs))
    assert e.value.line().startswith(said) and "\n" not in e.value.line()


def test_the_knobs_that_go_together_pass():
    for knobs in (
        {"routes": 65_280},
        {"sut": "xdp-router", "routes": 1000},
        {"ip_version": 6, "routes": 1_000_000, "flows": 1_000_000, "count_flows": True},
        {"nft_rules": 10_000, "nft_set": True, "conntrack": "on", "nat": "snat"},
        {"conntrack": "on", "conntrack_max": 1 << 20},
    ):
        testbed_scale.validate(replace(TestbedConfig(), **knobs))


def test_the_conntrack_limit_is_a_host_wide_sysctl_while_the_testbed_is_up():
    cfg = replace(TestbedConfig(), conntrack="on", conntrack_max=1 << 20, backlog=5000)
    assert cfg.global_sysctls() == {
        "net.core.netdev_max_backlog": "5000", "net.netfilter.nf_conntrack_max": "1048576",
    }  # fmt: skip


def test_the_generator_and_the_sink_are_told_the_same_destinations():
    cfg = replace(TestbedConfig(), routes=1000, flows=5000, flow_order="random", flow_seed=7,
                  count_flows=True)  # fmt: skip
    f = testbed_scale.fib(4, 1000)
    state = {"scale": {"fib": {"routes": 1000, "step": f.step}},
             "target": {"dst": testbed_scale.first_dst(cfg, "198.19.0.2")}}  # fmt: skip
    assert testbed_scale.flow_flags(cfg, state) == [
        "--dsts", "1000", "--dst-step", "64", "--flow-order", "random", "--flow-seed", "7",
    ]  # fmt: skip
    assert testbed_scale.sink_flow_flags(cfg, state) == [
        "--count-flows", "5000", "--dst", "198.19.1.1", "--dsts", "1000", "--dst-step", "64",
    ]  # fmt: skip
    assert testbed_scale.flow_flags(TestbedConfig(), {}) == []
    assert testbed_scale.sink_flow_flags(TestbedConfig(), {}) is None
    assert testbed_scale.sink_daddr(cfg, "198.19.0.2") == "{ 198.19.0.2, 198.19.0.0/16 }"
    assert testbed_scale.sink_daddr(TestbedConfig(), "198.19.0.2") == "198.19.0.2"


def test_scale_counts_are_written_as_the_loads_are():
    assert [parse_whole(t) for t in ("1", "1k", "100k", "1M", "250000", 7)] == [
        1, 1000, 100_000, 1_000_000, 250_000, 7,
    ]  # fmt: skip
    for bad in ("1.5", "x", "", True):
        with pytest.raises(UsageError):
            parse_whole(bad)
    assert count_in(1, 1_000_000, "flow count")("1M") == 1_000_000
    with pytest.raises(UsageError) as e:
        count_in(1, 1_000_000, "flow count")("2M")
    assert "bad flow count 2,000,000" in e.value.line()


def test_a_list_is_a_series_of_distinct_counts():
    assert (
        shared_scale.is_list("1,1k")
        and not shared_scale.is_list("1k")
        and not shared_scale.is_list(1000)
    )
    assert shared_scale.parse_list("1,1k,100k,1M", "--routes") == [1, 1000, 100_000, 1_000_000]
    for text, said in (("1,x", "'x' is not a count"), ("1k,1000", "1,000 is given twice")):
        with pytest.raises(UsageError) as e:
            shared_scale.parse_list(text, "--routes")
        assert said in e.value.line()


STAT = """entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
0003e800  00000000 00000000 00000000 00000001 00000000 00000000 00000000 00000000 00000002 00000003 00000010 00000000  00000000 00000000 00000000 00000000
0003e800  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000004 00000020 00000000  00000000 00000000 00000000 00000000
"""  # noqa: E501


def test_conntrack_statistics_are_summed_over_the_cpus():
    ct = sutstate.parse_conntrack("256000\n", STAT)
    assert ct["count"] == 256_000
    assert (ct["stats"]["drop"], ct["stats"]["early_drop"]) == (7, 0x30)
    assert ct["stats"]["insert_failed"] == 2 and ct["stats"]["invalid"] == 1
    assert "entries" not in ct["stats"]  # a gauge, not a counter


def _snap(count: int, drop: int, nft: dict[str, int]) -> dict:
    # a clash conntrack could not resolve counts at both drop and insert_failed
    stats = {"drop": drop, "insert_failed": drop, "early_drop": 0}
    return {"ns": {"sut": {"nft": nft, "conntrack": {"count": count, "stats": stats}}}}


def test_conntrack_drops_and_a_matching_rule_are_the_suts_forwarding_loss():
    before = _snap(10, 0, {"na_passed": 0, "na_blocked": 0, "na_ct_invalid": 0})
    after = _snap(262_144, 5, {"na_passed": 990, "na_blocked": 3, "na_ct_invalid": 2})
    fb, fa = flatten(before), flatten(after)
    d = {k: fa[k] - fb[k] for k in fb}
    loc = locate_loss(1000, 1000, 992, d)
    assert loc["sut_forward"] == 8 and loc["unaccounted"] == 0
    s = sutstate.summary(before, after, d, limit=262_144)
    assert s["conntrack"] == {"entries_before": 10, "entries_after": 262_144,
                              "limit": 262_144, "drop": 5, "insert_failed": 5}  # fmt: skip
    assert s["nft"] == {"passed": 990, "blocked": 3, "invalid": 2}
    assert sutstate.text(s) == (
        "conntrack 10 -> 262,144 entries (its limit 262,144) (5 dropped, 5 failed to insert,"
        " 2 invalid); "
        "nft passed 990, blocked 3"
    )
    assert sutstate.summary({}, {}, {}) == {}


def test_a_trial_at_scale_says_where_it_lost_frames_beside_the_suts_counts():
    counters = {"sut": {"nft": {"passed": 10, "blocked": 0}},
                "flows": {"flows": 4, "seen": 4, "min": 2, "max": 3, "misdirected": 0}}  # fmt: skip
    said = sutstate.beside(counters, {"unsent": 5, "sut_forward": 1, "sut_egress": 0})
    assert said == (
        " | lost at sut_forward 1; SUT: nft passed 10, blocked 0; "
        "flows 4 of 4 seen (2..3 frames each), 0 misdirected"
    )
    assert sutstate.beside({}, {"sut_forward": 1}) == ""
    assert sutstate.beside({"sut": {"nft": {"passed": 1}}}, {"unsent": 2}).startswith(
        " | nothing lost"
    )


def test_a_label_and_the_metadata_name_the_scale_knobs_set():
    cfg = replace(TestbedConfig(), flows=100_000, flow_order="random", routes=1000,
                  nft_rules=10_000, nft_set=True, conntrack="on", nat="snat")  # fmt: skip
    assert lab.scale_label(cfg) == (
        " 100k flows random 1k routes 10k rules as a set conntrack snat"
    )
    meta = lab.scale_metadata(cfg)
    assert meta == {"flow_order": "random", "flow_seed": 1, "routes": 1000, "nft_rules": 10_000,
                    "nft_set": True, "conntrack": "on", "nat": "snat"}  # fmt: skip
    assert lab.scale_label(TestbedConfig()) == "" and lab.scale_metadata(TestbedConfig()) == {}


def _exp(i: int, routes: int | None, label: str = "", rates: tuple = (1e5,)) -> Experiment:
    tb = {"routes": routes, "flows": 1, "ip_version": 4, "sut": "router"}
    cfg = {"rates_pps": list(rates), "runs": 1, "testbed": tb, "testbed_name": f"t{i}"}
    return Experiment(i, f"k{i}", "sweep", "netassay", label or f"router {routes} routes", "",
                      "", cfg, {}, {})  # fmt: skip


def test_a_scale_series_is_consecutive_experiments_that_differ_in_one_knob():
    # the loads a sweep chose from its MRR differ from one value to the next: still one
    exps = [_exp(1, 1), _exp(2, 1000, rates=(2e5,)), _exp(3, 100_000), _exp(4, 1000)]
    assert [[e.id for e in r] for r in shared_scale._runs(exps, "routes")] == [[1, 2, 3], [4]]
    labels = [_exp(1, 1, "sweep router 1 routes x"), _exp(2, 1000, "sweep router 1k routes x")]
    assert shared_scale._label(labels, "routes") == "sweep router x"


def test_the_series_table_has_a_row_per_value_against_the_first():
    s = shared_scale.ScaleSeries("sweep", "nft_rules", "", 4)
    s.points = [{"value": 10, "pdr_pps": 400_000.0}, {"value": 10_000, "pdr_pps": 100_000.0}]
    lines = shared_scale.table_text(s).splitlines()
    assert lines[0] == "scale series: nft rules (sweep, IPv4)"
    assert lines[2].split() == ["10", "0.4000", "1.000"]
    assert lines[3].split() == ["10,000", "0.1000", "0.250"]


def test_the_series_curve_is_drawn_against_the_scale(tmp_path):
    from netassay.shared.scale_figures import plot_series

    s = shared_scale.ScaleSeries("mrr", "routes", "router IPv6", 6)
    s.points = [{"value": v, "mrr_pps": r} for v, r in ((1, 4e5), (1000, 3.9e5), (10**6, 2e5))]
    png, svg = plot_series(s, tmp_path / "curve")
    assert png.stat().st_size > 1000 and svg.stat().st_size > 1000
