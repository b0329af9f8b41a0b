"""The RTT testbed kind: its names and addresses, its validation, its place in the one
testbed lifecycle (kind dispatch)."""

from __future__ import annotations

import ipaddress

import pytest

from netassay import names as N
from netassay.errors import UsageError
from netassay.testbed import rtt as RT
from netassay.testbed import topology as T
from netassay.testbed.bed import config_from_state


def test_roles_and_namespaces_are_testbed_namespaces():
    cfg = RT.RttTestbedConfig(background=128)
    roles = RT.roles(cfg)
    assert roles[:4] == ["sndsrv", "rspsrv", "sndep", "sndbg0"] and len(roles) == 2 + 2 * 129
    for role in roles:
        ns = N.netns("lab", role)
        assert N.is_testbed_netns(ns) and N.name_of(ns) == "lab"
    assert not N.is_testbed_netns("na-lab-sndbg1000") and not N.is_testbed_netns("na-lab-xx")
    with pytest.raises(ValueError):
        N.netns("lab", "sndvm")


def test_addresses_are_benchmarking_addresses_and_unique():
    cfg = RT.RttTestbedConfig(background=128)
    addrs = [RT.address(side, host) for side, _, host in RT.endpoints(cfg)]
    assert len(set(addrs)) == len(addrs)
    assert all(ipaddress.ip_address(a) in N.BENCH_V4 for a in addrs)
    assert RT.address("snd", RT.MAIN_HOST) == "198.18.100.2"
    assert RT.address("rsp", RT.MAIN_HOST) == "198.18.101.2"


@pytest.mark.parametrize(
    ("cfg", "what"),
    [
        (RT.RttTestbedConfig(path="sriov"), "unknown data path"),
        (RT.RttTestbedConfig(background=129), "background endpoints"),
        (RT.RttTestbedConfig(background=-1), "background endpoints"),
        (RT.RttTestbedConfig(cpus="3"), "bad cpus"),
    ],
)
def test_validation_refuses_before_anything_is_built(cfg, what):
    with pytest.raises(UsageError, match=what) as exc:
        T.check(cfg)  # the one lifecycle's check dispatches to the kind
    assert exc.value.exit_code == 2


def test_a_path_the_kernel_lacks_is_refused(monkeypatch):
    monkeypatch.setattr(RT, "kernel_lacks", lambda option: option == "CONFIG_IPVLAN")
    with pytest.raises(UsageError, match="not available on this kernel"):
        RT.validate(RT.RttTestbedConfig(path="ipvlan"))
    RT.validate(RT.RttTestbedConfig(path="macvlan"))


def test_kind_dispatch():
    assert T.kind_of(RT.RttTestbedConfig()) == "rtt"
    assert T.kind_of({"kind": "rtt"}) == "rtt" and T.kind_of({}) == T.FORWARDING
    state = {"kind": "rtt", "config": {"kind": "rtt", "path": "veth", "background": 3}}
    assert config_from_state(state) == RT.RttTestbedConfig(path="veth", background=3)
    assert RT.RttTestbedConfig().global_sysctls() == {}


def test_server_cpus(monkeypatch):
    monkeypatch.setattr(RT.os, "cpu_count", lambda: 2)
    assert RT.RttTestbedConfig().server_cpus() == {"snd": 0, "rsp": 1}
    monkeypatch.setattr(RT.os, "cpu_count", lambda: 1)
    assert RT.RttTestbedConfig().server_cpus() == {"snd": 0, "rsp": 0}
    assert RT.RttTestbedConfig(cpus="none").server_cpus() == {"snd": None, "rsp": None}
