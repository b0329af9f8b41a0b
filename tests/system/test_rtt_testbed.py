"""The RTT testbed, built and removed by the one testbed lifecycle (root, real namespaces)."""

from __future__ import annotations

import subprocess
import time

import pytest

from netassay.errors import TestbedError
from netassay.testbed import Testbed, state, topology
from netassay.testbed.rtt import PATHS, RttTestbedConfig, kernel_lacks

pytestmark = pytest.mark.system

AVAILABLE = [
    p for p, dp in PATHS.items() if not (dp.kernel_option and kernel_lacks(dp.kernel_option))
]


def _ping(ns: str, dst: str) -> bool:
    cp = subprocess.run(
        ["ip", "netns", "exec", ns, "ping", "-c", "2", "-i", "0.01", "-W", "1", "-q", dst],
        capture_output=True,
        text=True,
    )
    return cp.returncode == 0


@pytest.mark.parametrize("path", AVAILABLE)
def test_each_path_connects_the_endpoints_and_is_removed(tb_name, netns_of, path):
    with Testbed(tb_name, RttTestbedConfig(path=path, background=2)) as tb:
        assert len(netns_of(tb_name)) == 2 + 2 * 3
        assert tb.state["kind"] == "rtt" and state.read_state(tb_name)["kind"] == "rtt"
        for role in ("sndep", "sndbg0", "sndbg1"):
            peer = tb.state["peers"][role]
            assert _ping(tb.ns(role), peer["dst"]), (path, role)
        # the main endpoints reach only their peers' addresses, all in 198.18.0.0/15
        assert tb.state["peers"]["sndep"] == {
            "src": "198.18.100.2",
            "dst": "198.18.101.2",
            "dst_mac": tb.state["peers"]["sndep"]["dst_mac"],
        }
    assert netns_of(tb_name) == [] and state.read_state(tb_name) is None


def test_a_failed_build_removes_everything(tb_name, netns_of, monkeypatch):
    from netassay.testbed import rtt

    def broken(*a, **kw):
        raise TestbedError("injected", "a build step failed", "")

    monkeypatch.setattr(rtt, "_fdb", broken)
    cfg = RttTestbedConfig(path="bridge", background=1)
    with pytest.raises(TestbedError, match="injected"), Testbed(tb_name, cfg):
        pass
    assert netns_of(tb_name) == [] and state.read_state(tb_name) is None


def test_cleanup_ends_processes_left_in_the_namespaces(tb_name, netns_of):
    tb = Testbed(tb_name, RttTestbedConfig(path="veth"), keep=True)
    with tb:
        pass
    sleeper = subprocess.Popen(["ip", "netns", "exec", tb.ns("rspep"), "sleep", "300"])
    time.sleep(0.2)
    removed = topology.cleanup({tb_name})
    assert len(removed) == 4 and netns_of(tb_name) == []
    assert sleeper.wait(timeout=5) != 0  # ended by the cleanup, not by itself


def test_unavailable_path_is_refused_in_one_line(cli, tb_name, netns_of):
    missing = [p for p in PATHS if p not in AVAILABLE]
    if not missing:
        pytest.skip("every data path is available on this kernel")
    res = cli("rtt", "--name", tb_name, "--path", missing[0], "--count", "10")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "not available on this kernel" in res.stderr and netns_of(tb_name) == []
