"""--bidirectional's pure parts: each direction's counters and loss split, the MIB
shared between them, both generators' runs as one, the per-direction table, the
reverse cap's rule and target, and where it is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from netassay.config import TestbedConfig
from netassay.counters.loss import REVERSE_KEY, direction_deltas, flatten, locate_both, summed
from netassay.errors import UsageError
from netassay.hist import SinkHist
from netassay.shared.directions import (
    LoadBothWays,
    directions_json,
    directions_lines,
)
from netassay.shared.sweep_run import refuse_bidirectional
from netassay.testbed import topology
from netassay.testbed.external import ExternalConfig
from netassay.testbed.reverse import reverse_sink, reverse_target
from netassay.traffic.generator import GenResult
from netassay.trial import bidirectional
from netassay.trial.bidirectional import combined, record


def _gen(sent: int, planned: int | None = None, **kw) -> GenResult:
    doc = {
        "technique": "sendmmsg", "planned": planned or sent, "sent": sent, "first_tx_ns": 10,
        "last_tx_ns": 20, "duration_s": 1.0, "rate_pps": float(planned or sent),
        "achieved_rate_pps": float(sent), "rate_error": 0.0, "lateness_max_ns": 1000,
        "lateness_p99_ns": 500, "retries": 0, "stopped_by_signal": False, "ok": True, **kw,
    }  # fmt: skip
    return GenResult.from_json(doc)


def test_each_direction_reads_its_own_counters_under_the_forward_names():
    d = {
        "sut/nft/na_cap/packets": 7,  # the forward cap (sut1's egress)
        "sut/nft/na_cap_rev/packets": 300,  # the reverse cap (sut0's egress)
        "sut/link/sut1/rx_dropped": 5,  # the reverse direction's SUT ingress
        "tg/link/tg0/rx_dropped": 2,  # the reverse direction's sink
        "sink/xdp/packets": 993,
        REVERSE_KEY: 693,
    }
    fwd, rev, mib = direction_deltas(d)
    assert fwd["sut/nft/na_cap/packets"] == 7 and "sut/nft/na_cap_rev/packets" not in fwd
    assert rev["sut/nft/na_cap/packets"] == 300
    assert rev["sut/link/sut0/rx_dropped"] == 5 and rev["sink/link/sink0/rx_dropped"] == 2
    assert mib == 0
    loc_f, loc_r = locate_both((1000, 1000, 993, 0), (1000, 1000, 693, 0), d)
    assert loc_f["sut_egress"] == 7 and loc_f["unaccounted"] == 0
    assert loc_r["sut_egress"] == 300 and loc_r["sut_ingress"] == 5
    assert loc_r["sink_ingress"] == 2 and loc_r["unaccounted"] == 0
    both = summed(loc_f, loc_r)
    assert both["sut_egress"] == 307 and both["unaccounted"] == 0


def test_the_shared_ip_mib_goes_to_the_loss_it_explains_and_the_sums_hold():
    d = {"sut/snmp/Ip/OutDiscards": 9}
    # forward lost 4 that nothing else explains, reverse 3: 2 MIB drops are left over
    loc_f, loc_r = locate_both((100, 100, 96, 0), (100, 100, 97, 0), d)
    assert (loc_f["sut_forward"], loc_r["sut_forward"]) == (6, 3)
    assert (loc_f["unaccounted"], loc_r["unaccounted"]) == (-2, 0)
    both = summed(loc_f, loc_r)
    assert sum(v for k, v in both.items() if k not in ("unsent", "unaccounted")) == 9
    assert both["unaccounted"] == 7 - 9  # the trial's: lost minus explained


def test_the_reverse_sink_is_flattened_apart_from_the_forward_one():
    flat = flatten({"sink_xdp": {"packets": 10}, "reverse_xdp": {"packets": 4}})
    assert flat == {"sink/xdp/packets": 10, REVERSE_KEY: 4}


def test_both_generators_runs_as_one_and_each_kept():
    f = _gen(1000)
    r = _gen(990, planned=1000, retries=3, lateness_max_ns=9000, ok=False)
    c = combined(f, r)
    assert (c.planned, c.sent, c.retries) == (2000, 1990, 3)
    assert c.achieved_rate_pps == 1990.0 and c.rate_pps == 2000.0
    assert c.lateness_max_ns == 9000 and not c.ok
    assert c.raw["directions"]["reverse"]["sent"] == 990
    key = "sink/xdp/packets"
    rec = record(1000.0, (f, r), {key: 1000, REVERSE_KEY: 900}, key, 4)
    assert rec["rate_pps_per_direction"] == 1000.0
    assert (rec["forward"]["lost"], rec["reverse"]["lost"]) == (0, 90)
    assert rec["reverse"]["loss_location"]["unaccounted"] == 90
    assert rec["reverse"]["generator"]["retries"] == 3


def test_the_per_direction_table_states_the_aggregate_convention():
    row = LoadBothWays(60_000.0)
    side = {"sent": 60_000, "received": 60_000, "loss_location": {"sut_egress": 0}}
    capped = {"sent": 60_000, "received": 40_800, "loss_location": {"sut_egress": 19_200}}
    row.add({"forward": side, "reverse": capped})
    doc = directions_json([row])
    (load,) = doc["loads"]
    assert load["rate_pps_aggregate"] == 120_000 and load["runs"] == 1
    assert load["forward"]["loss_ratio"] == 0 and load["forward"]["main_location"] is None
    assert load["reverse"]["loss_ratio"] == pytest.approx(0.32)
    assert load["reverse"]["main_location"] == "sut_egress"
    lines = directions_lines(doc)
    assert "aggregate" in lines[0] and "FD.io CSIT" in lines[0]
    assert lines[-1].split()[3:] == ["reverse", "60000", "40800", "32.000%", "sut_egress"]


def test_a_reverse_cap_is_a_policer_on_the_egress_towards_the_generator():
    rules = topology._sut_rules(TestbedConfig(sut_cap_reverse_pps=50_000))
    assert 'hook egress device "sut0"' in rules and 'counter name "na_cap_rev"' in rules
    assert "limit rate over 50000/second burst 1000 packets" in rules
    assert 'device "sut1"' not in rules  # the forward direction is left alone
    both = topology._sut_rules(TestbedConfig(sut_cap_pps=80_000, sut_cap_reverse_pps=50_000))
    assert 'counter name "na_cap"' in both and 'counter name "na_cap_rev"' in both
    drop = topology._sut_rules(TestbedConfig(sut_drop=0.01))
    assert 'iifname "sut0"' in drop and 'iifname "sut1"' in drop and "na_drop_rev" in drop


def test_the_reverse_generator_sends_back_from_the_sink():
    state = {
        "config": {"sut": "router"},
        "namespaces": {"tg": "na-x-tg", "sut": "na-x-sut", "sink": "na-x-sink"},
        "addressing": {"tg": "198.18.0.2", "sink": "198.19.0.2"},
        "macs": {"tg0": "02:00:00:00:00:01", "sut1": "02:00:00:00:00:03"},
    }
    t = reverse_target(state)
    assert t == {"netns": "na-x-sink", "dev": "sink0", "dst_mac": "02:00:00:00:00:03",
                 "src": "198.19.0.2", "dst": "198.18.0.2"}  # fmt: skip
    bridge = reverse_target({**state, "config": {"sut": "bridge"}})
    assert bridge["dst_mac"] == "02:00:00:00:00:01"  # straight to the generator's veth


@pytest.mark.parametrize(
    ("cfg", "said"),
    [
        (TestbedConfig(sut="xdp-router"), "--bidirectional with --sut xdp-router"),
        (TestbedConfig(imix="simple"), "--bidirectional with --imix"),
        (TestbedConfig(sink="xdp+nft"), "--bidirectional with --sink xdp+nft"),
    ],
)
def test_bidirectional_is_refused_where_it_cannot_be_honoured(cfg, said):
    with pytest.raises(UsageError) as exc:
        refuse_bidirectional(cfg)
    assert exc.value.line().startswith(said) and "not available yet" in exc.value.line()


def test_bidirectional_runs_on_the_router_the_bridge_and_an_external_testbed():
    bridge = replace(TestbedConfig(), sut="bridge", sut_cap_pps=1e5)
    for cfg in (TestbedConfig(), bridge, ExternalConfig(tx="a", rx="b")):
        refuse_bidirectional(cfg)


def _hist(*ns: int) -> SinkHist:
    h = SinkHist()
    for v in ns:
        h.merge(SinkHist({"n": 1, "sum_ns": v, "min_ns": v, "max_ns": v,
                          "buckets": [[v, v + 1, 1]]}))  # fmt: skip
    return h


def test_with_latency_each_direction_keeps_its_histogram_and_the_trial_both():
    from netassay.trial.engine import _latency_warnings

    lat = bidirectional.Latencies(_hist(1000, 2000), _hist(3000))
    both = {"forward": {}, "reverse": {}}
    bidirectional.keep_latencies(both, lat)
    assert SinkHist(both["forward"]["latency"]).n == 2
    assert SinkHist(both["reverse"]["latency"]).max_ns == 3000
    merged = lat.merged()
    assert merged is not None and (merged.n, merged.min_ns, merged.max_ns) == (3, 1000, 3000)
    assert lat.forward is not None and lat.forward.n == 2  # merging took a copy
    d = {"sink/xdp/packets": 2, REVERSE_KEY: 2}  # the reverse sink counted one more
    (w,) = bidirectional.latency_warnings(lat, d, _latency_warnings)
    assert w.startswith("the sink's latency histogram holds 1 frame(s) of the 2")
    assert w.endswith("(reverse direction)")


def test_an_external_testbed_keeps_its_reverse_direction_in_its_state():
    state = {"kind": "external", "reverse": {
        "target": {"netns": None, "dev": "p1", "dst_mac": "02:00:00:00:00:07",
                   "src": "198.19.0.2", "dst": "198.18.0.2"},
        "sink": {"netns": "ports", "dev": "p0"},
    }}  # fmt: skip
    assert reverse_target(state) == state["reverse"]["target"]
    assert reverse_sink(state) == ("ports", "p0")
    assert reverse_sink({"namespaces": {"tg": "na-x-tg"}}) == ("na-x-tg", "tg0")


def test_each_generators_warnings_name_their_direction_and_keep_their_kind():
    from netassay import quality
    from netassay.trial.engine import _each_generator

    short = _gen(900, planned=1000)  # 10% short: a truncated trial
    w = _each_generator((_gen(1000), short), 1000.0, None)
    assert w and all(x.endswith("(reverse direction)") for x in w)  # a rate and a truncation
    assert quality.faults(w) == w  # still a measurement fault, kept out of the statistics
