"""The SUT's receive mode (--rx-mode) and what follows from it: how the generator sends,
where the wire's drops are located, a sweep's loads chosen past the MRR."""

from __future__ import annotations

from netassay.config import TestbedConfig
from netassay.counters.loss import locate_loss
from netassay.loads import AUTO_LOADS, AUTO_TOP, auto_rates
from netassay.methods.doctor import checks
from netassay.shared.sweep_plan import Plan, describe, estimate_s
from netassay.testbed import receive
from netassay.testbed.bed import config_from_state


def test_backlog_is_the_default_and_napi_sends_live_frames():
    cfg = TestbedConfig()
    assert cfg.rx_mode == "backlog" and not receive.napi(cfg)
    assert receive.gen_flags(cfg) == ["--qdisc"] and "sendmmsg" in receive.technique(cfg)
    napi = TestbedConfig(rx_mode="napi")
    assert receive.napi(napi) and receive.gen_flags(napi) == ["--technique", "xdp"]
    assert "XDP live frames" in receive.technique(napi)


def test_a_mix_and_two_generators_on_one_cpu_send_through_the_qdisc_in_napi_mode():
    assert receive.gen_flags(TestbedConfig(rx_mode="napi", imix="simple")) == ["--qdisc"]
    assert receive.gen_flags(TestbedConfig(rx_mode="napi"), shared=True) == ["--qdisc"]


def test_the_xdp_router_is_polled_by_napi_in_both_modes_and_sent_to_as_the_mode_says():
    xr = TestbedConfig(sut="xdp-router")
    assert receive.napi(xr) and receive.gen_flags(xr) == ["--qdisc"]  # as before the knob
    live = TestbedConfig(sut="xdp-router", rx_mode="napi")
    assert receive.napi(live) and receive.gen_flags(live) == ["--technique", "xdp"]


def test_a_testbed_or_experiment_from_before_the_knob_was_backlog_mode():
    old = {"config": {"sut": "router", "pinning": "pin-2cpu", "ip_version": 4}}
    assert config_from_state(old).rx_mode == "backlog"
    new = {"config": {**old["config"], "rx_mode": "napi"}}
    assert config_from_state(new).rx_mode == "napi"


def test_a_head_drop_wire_in_front_of_the_napi_ring_loses_at_the_sut_ingress():
    d = {"tg/qdisc/tg0/drops": 300}
    plain = locate_loss(1000, 1000, 700, d)
    assert (plain["gen_egress"], plain["sut_ingress"]) == (300, 0)
    ring = locate_loss(1000, 1000, 700, d, ring_wire=True)
    assert (ring["gen_egress"], ring["sut_ingress"], ring["unaccounted"]) == (0, 300, 0)


def test_live_frames_the_ring_refused_count_on_both_ends_of_the_veth_as_sut_ingress():
    # veth counts a frame its peer's full ring refused as the sender's tx_dropped and
    # the receiver's rx_dropped (measured): the SUT's ingress, not the generator's egress
    d = {"tg/link/tg0/tx_dropped": 250, "sut/link/sut0/rx_dropped": 250}
    loc = locate_loss(1000, 1000, 750, d)
    assert (loc["gen_egress"], loc["sut_ingress"], loc["unaccounted"]) == (0, 250, 0)


def test_loads_chosen_past_the_mrr_or_to_the_reach():
    rates = auto_rates(1_000_000)
    assert len(rates) == AUTO_LOADS
    assert rates[-1] == AUTO_TOP * 1_000_000 and rates[0] == round(1.3e6 / AUTO_LOADS, -3)
    assert list(rates) == sorted(set(rates))
    capped = auto_rates(1_000_000, reach_pps=1_100_000)
    assert capped[-1] == 1_100_000
    assert min(auto_rates(2_000)) == 1000.0  # never below 1 kpps
    assert auto_rates(50_000)[0] == 5400.0  # below 100 kpps, to 100 pps


def test_a_plan_with_no_loads_counts_its_chosen_loads_and_says_how_they_are_chosen():
    p = Plan((), runs=3, duration_s=1.0, settle_s=0.2)
    assert p.auto and p.loads == AUTO_LOADS and p.count() == AUTO_LOADS * 3
    text = describe(p)
    assert "flood measures the SUT's maximum receive rate" in text and "1.3x" in text
    assert estimate_s(p) > estimate_s(Plan((1e5,) * AUTO_LOADS, 3, 1.0, 0.2))
    assert not Plan((1e5,), 1, 1.0).auto


def test_the_reach_check_says_how_far_past_the_mrr_the_generator_paces():
    ok = checks.reach(5e6, 3e6, 1e6, p99_ns=12_000)
    assert ok.status == checks.PASS and "3.00x the MRR" in ok.figure and "12 us" in ok.figure
    assert ok.value["reach_over_mrr"] == 3.0
    short = checks.reach(2e6, 1.2e6, 1e6)
    assert short.status == checks.WARN and "not 1.3x it" in short.fix
    below = checks.reach(9e5, 8e5, 1e6)
    assert below.status == checks.WARN and "< MRR" in below.figure
