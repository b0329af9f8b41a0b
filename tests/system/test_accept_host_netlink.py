"""The test host's counters read by netlink inside each namespace (accept.host), on a
real veth pair between two namespaces: the datagrams sent are counted where they went,
the link counters are the ones iproute2 shows, and a namespace one may not join is
refused with the privilege error."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from netassay.counters import host
from netassay.proc import call_in_netns

pytestmark = pytest.mark.system
N = 2000


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def pair(tb_name):
    """na-<tb>-cli (x0, 198.18.30.1) and na-<tb>-srv (x1, 198.18.30.2), IPv6 off and the
    neighbour entry static, so that nothing but the test's datagrams crosses the pair."""
    cli, srv = f"na-{tb_name}-cli", f"na-{tb_name}-srv"
    for ns in (cli, srv):
        _ip("netns", "add", ns)
        for key in ("all", "default"):
            _ip("netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1")
    _ip("link", "add", "x0", "netns", cli, "type", "veth", "peer", "x1", "netns", srv)
    for ns, dev, addr in ((cli, "x0", "198.18.30.1/24"), (srv, "x1", "198.18.30.2/24")):
        _ip("-n", ns, "addr", "add", addr, "dev", dev)
        _ip("-n", ns, "link", "set", dev, "up")
    mac = json.loads(_ip("-n", srv, "-j", "link", "show", "dev", "x1"))[0]["address"]
    _ip("-n", cli, "neigh", "add", "198.18.30.2", "lladdr", mac, "dev", "x0", "nud", "permanent")
    return cli, srv


def _iproute2(ns: str, dev: str) -> dict[str, int]:
    """``ip -s link`` of ``dev``, named as struct rtnl_link_stats64 names its fields."""
    st = json.loads(_ip("-n", ns, "-j", "-s", "link", "show", "dev", dev))[0]["stats64"]
    plain = {"rx_multicast": "multicast", "tx_collisions": "collisions"}
    out = {f"{side}_{k}": v for side in ("rx", "tx") for k, v in st[side].items()}
    return {plain.get(k, k): v for k, v in out.items()}


def test_datagrams_counted_where_they_went_as_iproute2_shows(pair):
    cli, srv = pair
    rx = call_in_netns(srv, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    tx = call_in_netns(cli, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    probe = host.HostProbe({"sender": (cli, "x0"), "receiver": (srv, "x1")})
    try:
        rx.bind(("198.18.30.2", 9000))
        rx.settimeout(5)
        links0 = {ns: probe.readers[ns].links() for ns in pair}
        probe.start()
        for _ in range(N // 50):  # in bursts the receiver's socket buffer holds
            for _ in range(50):
                tx.sendto(b"x" * 100, ("198.18.30.2", 9000))
            for _ in range(50):
                rx.recv(2048)
        d = probe.deltas()
        links1 = {ns: probe.readers[ns].links() for ns in pair}
        truth = {ns: _iproute2(ns, dev) for ns, dev in ((cli, "x0"), (srv, "x1"))}
    finally:
        probe.close()
        rx.close()
        tx.close()
    assert d["sender.udp_out_datagrams"] == N and d["receiver.udp_in_datagrams"] == N
    assert d["receiver.rx_dropped"] == 0 and d["receiver.udp_rcvbuf_errors"] == 0
    sent = links1[cli]["x0"]["tx_packets"] - links0[cli]["x0"]["tx_packets"]
    got = links1[srv]["x1"]["rx_packets"] - links0[srv]["x1"]["rx_packets"]
    assert sent == N and got == N
    assert links1[srv]["x1"]["mtu"] == 1500
    for ns, dev in ((cli, "x0"), (srv, "x1")):
        assert {k: links1[ns][dev][k] for k in truth[ns]} == truth[ns]


def test_a_namespace_one_may_not_join_is_a_privilege_error(pair):
    code = (
        "from netassay.counters.host import NsReader\n"
        "from netassay.errors import NetassayError\n"
        f"try:\n    NsReader({pair[1]!r})\n"
        "except NetassayError as e:\n    print(type(e).__name__, e.exit_code, e.line())\n"
    )
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    out = subprocess.run([*nobody, sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.startswith(
        f"PrivilegeError 6 cannot read the counters of namespace {pair[1]}"
    )
    assert out.stdout.count("\n") == 1 and "run as root" in out.stdout
