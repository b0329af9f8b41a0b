"""Testbed names, addresses, knob validation, rules text and the lock (no root needed)."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys

import pytest

from netassay import names
from netassay.config import TestbedConfig
from netassay.errors import TestbedError, UsageError
from netassay.testbed import state, topology


@pytest.mark.parametrize("name", ["lab", "t1", "a", "abcdefgh", "0"])
def test_good_names(name):
    assert names.validate_name(name) == name
    assert names.netns(name, "sut") == f"na-{name}-sut"


@pytest.mark.parametrize(
    "name", ["", "Lab", "a;rm -rf /", "$(id)", "a b", "abcdefghi", "a-b", "../x", "a\n", "é"]
)
def test_bad_names_are_usage_errors(name):
    with pytest.raises(UsageError) as err:
        names.validate_name(name)
    assert "bad testbed name" in err.value.line()
    assert "\n" not in err.value.line()


def test_netns_recognition():
    assert names.is_testbed_netns("na-lab-tg")
    assert names.name_of("na-x1-sink") == "x1"
    for other in ("na-lab-xx", "na-lab", "nb-lab-tg", "na-LAB-tg", "na-t1-g", "na-a;b-tg"):
        assert not names.is_testbed_netns(other)
        assert names.name_of(other) is None


@pytest.mark.parametrize("sut", ["router", "bridge"])
@pytest.mark.parametrize("ipv", [4, 6])
def test_addresses_only_from_benchmarking_ranges(sut, ipv):
    a = names.addressing(sut, ipv)
    net = names.BENCH_V4 if ipv == 4 else names.BENCH_V6
    for addr in (a.tg, a.sink, a.sut_in, a.sut_out):
        if addr is not None:
            assert ipaddress.ip_address(addr) in net
    assert a.tg != a.sink


def test_foreign_address_refused():
    bad = names.Addressing(4, 24, "10.0.0.1", "198.19.0.2", None, None)
    with pytest.raises(UsageError, match="outside"):
        names.check_benchmark_addresses(bad)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"pinning": "pin-3cpu"}, "unknown pinning"),
        ({"sut": "switch"}, "unknown SUT"),
        ({"ip_version": 5}, "bad IP version"),
        ({"size_bytes": 63}, "bad frame size"),
        ({"size_bytes": 64, "ip_version": 6}, "bad frame size"),
        ({"size_bytes": 1519}, "bad frame size"),
        ({"flows": 0}, "bad flow count"),
        ({"sut_drop": 1.0}, "bad --sut-drop"),
        ({"sut_drop": -0.1}, "bad --sut-drop"),
        ({"sut_cap_pps": 0.5}, "bad --sut-cap"),
        ({"backlog": 0}, "bad backlog"),
    ],
)
def test_knob_validation(kw, match):
    with pytest.raises(UsageError, match=match):
        topology.validate(TestbedConfig(**kw))


def test_default_knobs_are_valid():
    topology.validate(TestbedConfig())
    topology.validate(TestbedConfig(sut="bridge", ip_version=6, size_bytes=84, pinning="pin-1cpu"))


def test_the_cap_bucket_is_a_queue_on_the_path():
    # 20 ms of traffic at the cap; a stall's burst larger than it is flagged (the bucket
    # counts as a queue on the path, see path_queue_pkts)
    assert topology.cap_bucket_pkts(TestbedConfig()) is None
    assert topology.cap_bucket_pkts(TestbedConfig(sut_cap_pps=150_000)) == 3000
    assert topology.cap_bucket_pkts(TestbedConfig(sut_cap_pps=1000)) == 64
    rules = topology._sut_rules(TestbedConfig(sut_cap_pps=150_000))
    assert "burst 3000 packets" in rules


def test_ground_truth_rules():
    assert topology._sut_rules(TestbedConfig()) is None
    rules = topology._sut_rules(TestbedConfig(sut_drop=0.005, sut_cap_pps=100_000))
    assert "numgen random mod 1000000 < 5000" in rules
    assert "table inet na_sut" in rules
    assert "limit rate over 100000/second burst 2000 packets" in rules
    assert 'hook egress device "sut1"' in rules
    bridge = topology._sut_rules(TestbedConfig(sut="bridge", sut_drop=0.01))
    assert "table bridge na_sut" in bridge and "< 10000" in bridge


def test_sink_rules_count_only_test_packets():
    v4 = topology._sink_rules(TestbedConfig())
    assert "ip saddr 198.18.0.0/15 ip daddr 198.19.0.2 meta l4proto udp" in v4
    assert "@th,64,32 0x6e614731" in v4
    assert 'counter name "na_rx"' in v4
    v6 = topology._sink_rules(TestbedConfig(ip_version=6, size_bytes=84))
    assert "ip6 saddr 2001:2::/48 ip6 daddr 2001:2:0:2::2" in v6


def test_state_roundtrip_and_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    assert state.read_state("lab") is None
    state.write_state("lab", {"name": "lab", "config": {}})
    assert state.read_state("lab") == {"name": "lab", "config": {}}
    assert state.known_testbeds() == ["lab"]
    with state.Lock("lab"):
        assert (tmp_path / "lab.lock").read_text() == str(os.getpid())
        with pytest.raises(TestbedError, match="busy"):
            state.Lock("lab").acquire()
    state.Lock("lab").acquire().release()  # free again once released
    state.remove_state("lab")
    assert state.known_testbeds() == []


def test_lock_is_held_across_processes(tmp_path, monkeypatch):
    """A lock held by another process refuses; it is freed when that process dies."""
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    code = (
        "import sys, time; from netassay.testbed.state import Lock; Lock('lab').acquire();"
        "print('locked', flush=True); time.sleep(30)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        with pytest.raises(TestbedError, match=f"pid {p.pid}"):
            state.Lock("lab").acquire()
        p.kill()
        p.wait()
        state.Lock("lab").acquire().release()
    finally:
        p.kill()
        p.wait()


def test_corrupt_state_is_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    (tmp_path / "lab.json").write_text("{not json")
    with pytest.raises(TestbedError, match="cannot read testbed state"):
        state.read_state("lab")
