"""The RTT testbed kind: its names and addresses, its validation, its place in the one
testbed lifecycle (kind dispatch)."""

from __future__ import annotations

import ipaddress

import pytest

from netassay import names
from netassay.errors import UsageError
from netassay.testbed import rtt, topology
from netassay.testbed.bed import config_from_state


def test_roles_and_namespaces_are_testbed_namespaces():
    cfg = rtt.RttTestbedConfig(background=128)
    roles = rtt.roles(cfg)
    assert roles[:4] == ["sndsrv", "rspsrv", "sndep", "sndbg0"] and len(roles) == 2 + 2 * 129
    for role in roles:
        ns = names.netns("lab", role)
        assert names.is_testbed_netns(ns) and names.name_of(ns) == "lab"
    assert not names.is_testbed_netns("na-lab-sndbg1000") and not names.is_testbed_netns(
        "na-lab-xx"
    )
    with pytest.raises(ValueError):
        names.netns("lab", "sndvm")


def test_addresses_are_benchmarking_addresses_and_unique():
    cfg = rtt.RttTestbedConfig(background=128)
    addrs = [rtt.address(side, host) for side, _, host in rtt.endpoints(cfg)]
    assert len(set(addrs)) == len(addrs)
    assert all(ipaddress.ip_address(a) in names.BENCH_V4 for a in addrs)
    assert rtt.address("snd", rtt.MAIN_HOST) == "198.18.100.2"
    assert rtt.address("rsp", rtt.MAIN_HOST) == "198.18.101.2"


@pytest.mark.parametrize(
    ("cfg", "what"),
    [
        (rtt.RttTestbedConfig(path="sriov"), "unknown data path"),
        (rtt.RttTestbedConfig(background=129), "background endpoints"),
        (rtt.RttTestbedConfig(background=-1), "background endpoints"),
        (rtt.RttTestbedConfig(cpus="3"), "bad cpus"),
    ],
)
def test_validation_refuses_before_anything_is_built(cfg, what):
    with pytest.raises(UsageError, match=what) as exc:
        topology.check(cfg)  # the one lifecycle's check dispatches to the kind
    assert exc.value.exit_code == 2


def test_a_path_the_kernel_lacks_is_refused(monkeypatch):
    monkeypatch.setattr(rtt, "kernel_lacks", lambda option: option == "CONFIG_IPVLAN")
    with pytest.raises(UsageError, match="not available on this kernel"):
        rtt.validate(rtt.RttTestbedConfig(path="ipvlan"))
    rtt.validate(rtt.RttTestbedConfig(path="macvlan"))


def test_kind_dispatch():
    assert topology.kind_of(rtt.RttTestbedConfig()) == "rtt"
    assert (
        topology.kind_of({"kind": "rtt"}) == "rtt" and topology.kind_of({}) == topology.FORWARDING
    )
    state = {"kind": "rtt", "config": {"kind": "rtt", "path": "veth", "background": 3}}
    assert config_from_state(state) == rtt.RttTestbedConfig(path="veth", background=3)
    assert rtt.RttTestbedConfig().global_sysctls() == {}


def test_server_cpus(monkeypatch):
    monkeypatch.setattr(rtt.os, "cpu_count", lambda: 2)
    assert rtt.RttTestbedConfig().server_cpus() == {"snd": 0, "rsp": 1}
    monkeypatch.setattr(rtt.os, "cpu_count", lambda: 1)
    assert rtt.RttTestbedConfig().server_cpus() == {"snd": 0, "rsp": 0}
    assert rtt.RttTestbedConfig(cpus="none").server_cpus() == {"snd": None, "rsp": None}
