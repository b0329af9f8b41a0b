"""The external testbed on a real kernel: a SUT netassay does not manage, between two
ports of the host's own namespace.

The SUT here is a plain kernel router the test builds by hand, not netassay: per port a
veth pair whose host end is named ``na-<testbed>-tx`` / ``na-<testbed>-rx`` (the ports
given to netassay) and whose other end sits in the router's namespace
``na-<testbed>-ext``, with forwarding on, static neighbours and a ground-truth cap (an
nft policer on the forward hook). Everything the test built is removed after it, even
on failure, and nothing of the host but the two ports' counters may change.

Needs root and netassay-gen; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from netassay import quality
from netassay.hist import SinkHist
from netassay.store.db import Store
from netassay.testbed.pathcheck import PROBE_FRAMES

pytestmark = pytest.mark.system
CAP_PPS = 30_000
WRONG_MAC = "02:00:00:00:00:99"
BOTH_LOW, BOTH_HIGH = 10_000, 40_000  # --bidirectional: pps per direction, CAP_PPS between
DIRS = ("forward", "reverse")
V4 = ("198.18.0.2", "198.19.0.2")
SYSCTLS = ("/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/core/netdev_max_backlog")


def every_probe_came_back(text: str, what: str = "path check") -> None:
    """``what`` said ok with every probe sent back (N of N, one hop). netassay-gen sends
    the burst on its schedule and may end it a frame or two short on a busy host (98 of
    98 in one CI run): the count sent is said as it was, so it need only be most of it."""
    m = re.search(rf"{re.escape(what)}: ok: (\d+) of (\d+) probes came back, 1 hop", text)
    assert m is not None, text
    back, sent = int(m[1]), int(m[2])
    assert back == sent >= 0.9 * PROBE_FRAMES, text


def sh(*argv: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kw)


def mac_of(dev: str, netns: str | None = None) -> str:
    pre = ["-n", netns] if netns else []
    return json.loads(sh("ip", *pre, "-j", "link", "show", "dev", dev).stdout)[0]["address"]


class HandRouter:
    """A kernel router between two host ports, built the way a user would by hand."""

    def __init__(
        self, name: str, ports_ns: str | None = None, v6: bool = False, cap_on: str | None = None
    ) -> None:
        self.ns = f"na-{name}-ext"
        self.tx, self.rx = f"na-{name}-tx", f"na-{name}-rx"
        self.ports = ports_ns  # where the ports are (None: the host's namespace)
        self.v6 = v6
        self.cap_on = cap_on  # the cap on one port's egress only (None: all it forwards)
        self.src, self.dst = ("2001:2:0:1::2", "2001:2:0:2::2") if v6 else V4
        self.in_mac = ""

    def ip(self, *args: str) -> list[str]:
        """An ``ip`` command on the ports' side."""
        return ["ip", *(["-n", self.ports] if self.ports else []), *args]

    def build(self, cap_pps: int | None = CAP_PPS) -> HandRouter:
        if self.ports:
            sh("ip", "netns", "add", self.ports)
        sh("ip", "netns", "add", self.ns)
        keys = ("accept_dad=0", "accept_ra=0") if self.v6 else ("disable_ipv6=1",)
        for k in keys:
            for conf in ("all", "default"):
                sh("ip", "netns", "exec", self.ns, "sysctl", "-qw", f"net.ipv6.conf.{conf}.{k}")
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        addrs = (
            ("2001:2:0:1::1/64", "2001:2:0:2::1/64")
            if self.v6
            else ("198.18.0.1/24", "198.19.0.1/24")
        )
        for host, inner, addr in ((self.tx, "in0", addrs[0]),
                                  (self.rx, "out0", addrs[1])):  # fmt: skip
            sh(*self.ip("link", "add", host, "type", "veth", "peer", "name", inner, "netns",
                        self.ns))  # fmt: skip
            # no IPv6 on the host's ends: their addresses and routes would still be
            # settling while the test compares the host before and after
            key = f"net.ipv6.conf.{host}.disable_ipv6=1"
            sh(*(["ip", "netns", "exec", self.ports] if self.ports else []), "sysctl", "-qw", key)
            sh("ip", "-n", self.ns, "addr", "add", addr, "dev", inner, *(["nodad"] * self.v6))
            sh("ip", "-n", self.ns, "link", "set", inner, "up")
            sh(*self.ip("link", "set", host, "up"))
        self.in_mac = mac_of("in0", self.ns)
        self.forwarding(True)
        self.neighbour(mac_of(self.rx, self.ports))
        # the way back too (--bidirectional): the source's neighbour on the tx side
        sh("ip", "-n", self.ns, "neigh", "replace", self.src, "lladdr",
           mac_of(self.tx, self.ports), "dev", "in0", "nud", "permanent")  # fmt: skip
        if cap_pps:
            where = f'oifname "{self.cap_on}" ' if self.cap_on else ""
            rules = f"""table inet na_cap {{
  chain na_fwd {{ type filter hook forward priority 0; policy accept;
    {where}meta l4proto udp limit rate over {cap_pps}/second burst {cap_pps // 100} packets drop
  }}
}}
"""
            sh("ip", "netns", "exec", self.ns, "nft", "-f", "-", input=rules)
        # its forwarding on CPU 1, as a box of its own; the generator is pinned to CPU 0
        for inner in ("in0", "out0"):
            path = f"/sys/class/net/{inner}/queues/rx-0/rps_cpus"
            sh("ip", "netns", "exec", self.ns, "tee", path, input="2\n")
        return self

    def forwarding(self, on: bool) -> None:
        key = "net.ipv6.conf.all.forwarding" if self.v6 else "net.ipv4.ip_forward"
        sh("ip", "netns", "exec", self.ns, "sysctl", "-qw", f"{key}={int(on)}")

    def neighbour(self, mac: str) -> None:
        sh("ip", "-n", self.ns, "neigh", "replace", self.dst, "lladdr", mac, "dev", "out0",
           "nud", "permanent")  # fmt: skip

    def remove(self) -> None:
        for dev in (self.tx, self.rx):
            subprocess.run(self.ip("link", "del", dev), capture_output=True)
        for ns in (self.ns, self.ports):
            if ns:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def args(self, name: str, *extra: str) -> list[str]:
        return ["testbed", "external", "--tx", self.tx, "--rx", self.rx,
                "--dst-mac", self.in_mac, "--src", self.src, "--dst", self.dst,
                "--name", name, "--cpu", "0", *(["--size", "84"] if self.v6 else []),
                *(["--netns", self.ports] if self.ports else []), *extra]  # fmt: skip


def _gone(name: str) -> None:
    """Nothing the test built is left: no port, no namespace."""
    links = json.loads(sh("ip", "-j", "link", "show").stdout)
    assert not [x["ifname"] for x in links if x["ifname"].startswith(f"na-{name}-")]
    assert f"na-{name}-" not in sh("ip", "netns", "list").stdout


@contextmanager
def _hand_router(tb_name: str, **kw) -> Iterator[HandRouter]:
    """Build it; remove it and check that nothing is left, even on failure."""
    r = HandRouter(tb_name, **kw)
    try:
        yield r.build()
    finally:
        r.remove()
        _gone(tb_name)


@pytest.fixture
def router(tb_name):
    with _hand_router(tb_name) as r:
        yield r


@pytest.fixture
def router_in_netns(tb_name):
    """The same router, its ports in a namespace given to netassay as the host's."""
    with _hand_router(tb_name, ports_ns=f"na-{tb_name}-ports") as r:
        yield r


@pytest.fixture
def router_v6(tb_name):
    with _hand_router(tb_name, v6=True) as r:
        yield r


@pytest.fixture
def cable(tb_name):
    """The two ports joined by a cable (one veth pair): nothing routes between them."""
    tx, rx = f"na-{tb_name}-tx", f"na-{tb_name}-rx"
    try:
        sh("ip", "link", "add", tx, "type", "veth", "peer", "name", rx)
        for dev in (tx, rx):
            Path(f"/proc/sys/net/ipv6/conf/{dev}/disable_ipv6").write_text("1\n")
            sh("ip", "link", "set", dev, "up")
        yield tx, rx
    finally:
        subprocess.run(["ip", "link", "del", tx], capture_output=True)
        _gone(tb_name)


def host_view(ports: tuple[str, str]) -> dict:
    """What must not change on the host: every link (flags, MTU, qdisc, XDP, master),
    addresses, routes, forwarding and the global backlog."""
    links = json.loads(sh("ip", "-d", "-j", "link", "show").stdout)
    keep = ("ifname", "flags", "mtu", "qdisc", "master", "xdp", "operstate", "address")
    return {
        "links": {x["ifname"]: {k: x.get(k) for k in keep} for x in links},
        "addrs": sh("ip", "-j", "addr", "show").stdout,
        "routes": sh("ip", "-j", "route", "show", "table", "all").stdout,
        "routes6": sh("ip", "-6", "-j", "route", "show", "table", "all").stdout,
        "sysctls": [Path(p).read_text() for p in SYSCTLS]
        + [Path(f"/proc/sys/net/ipv4/conf/{d}/forwarding").read_text() for d in ports],
    }


@pytest.mark.slow
def test_sweep_through_a_hand_made_router_finds_its_cap(
    router, tb_name, tmp_path, cli, assess, stored
):
    """Registered (path checked, peak measured), swept: the PDR@0.5% is within 5% of the
    router's cap, the loss lies between the ports, the SUT's own counters agree with the
    sink; the line rate of veth is unknown and said so; after 'down' the host is as it
    was."""
    before = host_view((router.tx, router.rx))
    nstat = f"ip netns exec {router.ns} nstat -a -s -z"
    res = cli(*router.args(tb_name, "--sut-counters-cmd", nstat))
    assert res.returncode == 0, res.stderr
    every_probe_came_back(res.stdout)
    assert "line rate unknown" in res.stdout

    show = cli("testbed", "show", tb_name)
    assert show.returncode == 0, show.stderr
    assert "generator peak through the path: " in show.stdout and "not measured" not in show.stdout
    assert "line rate unknown: no port reports a link speed" in show.stdout

    far = cli("sweep", "--testbed", tb_name, "--rates", "50M", "--runs", "2", "--db",
              str(tmp_path / "far.db"))  # fmt: skip
    assert far.returncode == 7 and "above what the generator can send" in far.stderr
    assert "line rate" not in far.stderr  # unknown on veth: nothing refused for it

    db = tmp_path / "ext.db"
    res = cli("sweep", "--testbed", tb_name, "--rates", "24k,27k,29.5k,31.5k,34k,37k",
              "--runs", "2", "--duration", "1s", "--settle", "0.1s", "--retries", "4",
              "--db", str(db))  # fmt: skip
    assert res.returncode == 0, res.stderr
    a = assess(db)
    assert abs(a["pdr_pps"] - CAP_PPS) <= 0.05 * CAP_PPS, a
    exp, trials = stored(db)
    assert exp.metadata["testbed"] == "external"
    ext = exp.environment["external"]
    assert ext["ports"]["rx"]["driver"]["driver"] == "veth"
    assert ext["line_rate"]["pps"] is None and ext["path_check"]["ok"]
    assert exp.environment["generator_peak_pps"] > 40_000
    for t in trials:
        c, lost = t["counters"], t["sent"] - t["received"]
        assert not t["excluded"], t["warnings"]
        assert router.rx in c["ethtool"] and c["sut_counters"]["before"]["stdout"]
        # the router's own counters: it took every frame sent to forward it, and what
        # it sent on (50-byte IP packets) is what the sink counted
        sut = c["sut_counters"]["deltas"]
        assert abs(sut.get("IpForwDatagrams", 0) - t["sent"]) <= 2, sut
        assert abs(sut.get("IpExtOutOctets", 0) / 50 - t["received"]) <= 2, sut
        assert t["loss_location"]["between_ports"] == lost, t["loss_location"]
        if t["rate_pps"] >= 34_000:
            assert lost > 0.05 * t["sent"]

    found = cli("search", "--testbed", tb_name, "--goal", "pdr", "--max-load", "37k",
                "--min-load", "20k", "--duration-sum", "2s", "--width", "2%", "--json",
                "--db", str(tmp_path / "search.db"))  # fmt: skip
    assert found.returncode == 0, found.stderr
    pdr = json.loads(found.stdout)["goals"][0]
    assert abs(pdr["relevant_lower_bound_pps"] - CAP_PPS) <= 0.05 * CAP_PPS, pdr
    high = cli("search", "--testbed", tb_name, "--size", "128", "--db", str(tmp_path / "x.db"))
    assert high.returncode == 2 and "cannot be given here" in high.stderr

    down = cli("testbed", "down", tb_name)
    assert down.returncode == 0, down.stderr
    after = host_view((router.tx, router.rx))
    assert {k: v for k, v in after.items() if v != before[k]} == {}, before


def test_path_check_refuses_a_router_that_does_not_route(router, tb_name, cli):
    """No forwarding: nothing comes back; a wrong neighbour: the wrong MAC comes back.
    Each is one line, exit 5, and nothing is registered."""
    router.forwarding(False)
    res = cli(*router.args(tb_name))
    assert res.returncode == 5, res.stderr
    err = res.stderr.strip()
    assert "\n" not in err and "netassay: path check failed: none of the 100 probe" in err
    assert cli("testbed", "show", tb_name).returncode == 5  # not registered

    router.forwarding(True)
    router.neighbour(WRONG_MAC)
    res = cli(*router.args(tb_name))
    assert res.returncode == 5, res.stderr
    assert f"addressed to MAC {WRONG_MAC}, not {mac_of(router.rx)}" in res.stderr
    assert cli("testbed", "show", tb_name).returncode == 5


def test_destination_outside_the_ranges_is_refused(router, tb_name, cli):
    args = router.args(tb_name)
    args[args.index("--dst") + 1] = "10.11.12.13"
    res = cli(*args)
    assert res.returncode == 2
    assert res.stderr.strip().startswith("netassay: refusing --dst 10.11.12.13")
    assert cli("testbed", "show", tb_name).returncode == 5


def test_path_check_refuses_a_cable(cable, tb_name, cli):
    """Frames sent straight to the rx port come back with the MAC expected but their TTL
    as sent: one line says nothing routed them."""
    tx, rx = cable
    res = cli("testbed", "external", "--tx", tx, "--rx", rx, "--dst-mac", mac_of(rx),
              "--src", "198.18.0.2", "--dst", "198.19.0.2", "--name", tb_name)  # fmt: skip
    assert res.returncode == 5, res.stderr
    assert "with TTL 64, as sent (64): nothing routed them" in res.stderr
    assert cli("testbed", "show", tb_name).returncode == 5


# what a trial says of the generator's own shortfall or stall (quality's words)
GENERATOR_WORDS = ("the generator sent", quality.TRUNCATED, quality.GENERATOR_STALL,
                   quality.STALL_HARMLESS)  # fmt: skip


def _below_the_cap(t: dict, planned: int) -> None:
    """Below its cap the router forwards every frame it is sent: none lost anywhere on
    the path, so received == sent. The generator may send fewer than planned on a loaded
    host (runs beside a busy CPU: 9 to 15 of 20,000, after a stall of 11-12 ms, the
    trial used); that shortfall is the host's where the trial says so, as unsent and in a
    warning about the generator. A catch-up burst after a stall the trial names can go
    through the cap's bucket (CAP_PPS / 100 frames): then only what the burst brought
    over the bucket may be lost, all between the ports; nothing else, ever."""
    why = (t["sent"], t["received"], t["loss_location"], t["warnings"])
    unsent, lost = planned - t["sent"], t["sent"] - t["received"]
    assert t["loss_location"]["unsent"] == max(0, unsent), why
    if unsent:
        assert any(w.startswith(GENERATOR_WORDS) for w in t["warnings"]), why
    if lost:
        stalled = any(w.startswith(quality.GENERATOR_STALL) for w in t["warnings"])
        g = t["counters"]["generator"]
        burst = quality.stall_burst(g.get("lateness_max_ns"), t["rate_pps"])
        assert stalled and t["loss_location"]["between_ports"] == lost, why
        assert lost <= burst - CAP_PPS // 100, (burst, why)


def _two_loads(tb_name, tmp_path, cli) -> tuple[dict, dict]:
    """A sweep of 20k (below the cap) and 40k (above), one 1-second trial each."""
    db = tmp_path / "two.db"
    res = cli("sweep", "--testbed", tb_name, "--rates", "20k,40k", "--runs", "1",
              "--duration", "1s", "--retries", "4", "--db", str(db))  # fmt: skip
    assert res.returncode == 0, res.stderr
    with Store(db) as st:
        trials = st.trials(next(iter(st.experiments())).id)
    low, high = sorted(trials, key=lambda t: t["rate_pps"])
    _below_the_cap(low, 20_000)
    assert high["loss_location"]["between_ports"] == high["sent"] - high["received"] > 8000
    return low, high


@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_ports_in_a_namespace_given_to_netassay(router_in_netns, tb_name, tmp_path, cli):
    """--netns: the same path check, counting and loss split, with the ports in a
    namespace netassay did not create (it is left in place by 'cleanup')."""
    r = router_in_netns
    res = cli(*r.args(tb_name))
    assert res.returncode == 0, res.stderr
    assert f"XDP sink (netns {r.ports})" in res.stdout and "path check: ok" in res.stdout
    _two_loads(tb_name, tmp_path, cli)
    assert cli("testbed", "cleanup", "--name", tb_name).returncode == 0  # forgets it too
    assert cli("testbed", "show", tb_name).returncode == 5
    assert r.ports in sh("ip", "netns", "list").stdout
    assert r.rx in sh("ip", "-n", r.ports, "link", "show").stdout


def test_ipv6_through_a_hand_made_router(router_v6, tb_name, tmp_path, cli):
    """IPv6: the hop limit is checked, the XDP sink counts 84-byte frames, the cap's loss
    lies between the ports."""
    res = cli(*router_v6.args(tb_name))
    assert res.returncode == 0, res.stderr
    assert "IPv6, 84-byte frames" in res.stdout, res.stdout
    every_probe_came_back(res.stdout)
    _two_loads(tb_name, tmp_path, cli)
    assert cli("testbed", "down", tb_name).returncode == 0


def test_latency_on_an_external_testbed(router, tb_name, tmp_path, cli):
    """The generator and the sink share the host's clock on an external testbed too: the
    latency command stores each trial's one-way histogram, and below the router's cap
    every frame counted has a latency, well under a millisecond."""
    res = cli(*router.args(tb_name))
    assert res.returncode == 0, res.stderr
    db = tmp_path / "lat.db"
    res = cli("latency", "--testbed", tb_name, "--rates", "5k,20k", "--runs", "1",
              "--duration", "1s", "--settle", "0.1s", "--db", str(db), "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["latency"]
    print(json.dumps(rows))
    assert [r["rate_pps"] for r in rows] == [5_000, 20_000]
    for r in rows:
        assert 0 < r["p50_ns"] < 1e6, r
    with Store(db, readonly=True) as st:
        (exp,) = list(st.experiments())
        trials = st.trials(exp.id)
    assert exp.metadata["testbed"] == "external" and exp.config.get("latency") is True
    for t in trials:
        hist = SinkHist(t["counters"]["latency"])
        assert t["received"] == t["sent"] > 0, t["loss_location"]
        assert hist.n == t["received"] and hist.ahead == 0, hist.summary()
        assert 0 < hist.min_ns < 1e6, hist.summary()
    assert cli("testbed", "down", tb_name).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize(("cap_on", "capped"), [("out0", "forward"), ("in0", "reverse")])
def test_bidirectional_a_cap_on_one_direction_shows_in_that_direction_only(
    tb_name, tmp_path, cli, cap_on, capped
):
    """--bidirectional on an external testbed: a generator and an XDP sink on each port.
    The hand-made router's cap (a policer on one port's egress only) shows in that
    direction only: under it neither direction loses a frame; over it the capped one
    receives the cap's rate and its bucket, its loss between the ports, and the other
    loses nothing. The reverse path is checked as the forward one (routed, back at the
    tx port), its sink detached after the run. With --latency each end's sink keeps its
    direction's histogram, one latency per frame it counted."""
    with _hand_router(tb_name, cap_on=cap_on) as router:
        res = cli(*router.args(tb_name))
        assert res.returncode == 0, res.stderr
        db = tmp_path / "both.db"
        res = cli("sweep", "--bidirectional", "--testbed", tb_name, "--rates",
                  f"{BOTH_LOW},{BOTH_HIGH}", "--runs", "1", "--duration", "1s", "--settle",
                  "0.1s", "--retries", "4", "--no-peak-check", "--latency", "--db", str(db),
                  "--json")  # fmt: skip
        assert res.returncode == 0, res.stderr
        other = "forward" if capped == "reverse" else "reverse"
        with Store(db, readonly=True) as st:
            (exp,) = list(st.experiments())
            low, high = st.trial_records(exp.id)
        assert exp.config["bidirectional"] is True
        back = exp.environment["external"]["reverse_path_check"]
        assert back["ok"] and back["came_back"] == 100 and back["hops"] == 1, back
        for t in (low, high):
            both = t.counters["bidirectional"]
            print(t.rate_pps, t.sent, t.received, t.loss_location, t.warnings)
            print({d: {k: v for k, v in both[d].items() if k != "generator"} for d in DIRS})
            assert not t.excluded, t.warnings
            assert t.rate_pps == 2 * both["rate_pps_per_direction"]
            assert t.received == both["forward"]["received"] + both["reverse"]["received"]
            assert both[other]["lost"] == 0  # the cap is not on its path
            for d in DIRS:
                assert both[d]["sent"] == pytest.approx(t.rate_pps / 2, rel=0.001)
                assert both[d]["loss_location"]["unaccounted"] == 0
                # --latency: each end's sink keeps its direction's histogram, every frame
                hist = SinkHist(both[d]["latency"])
                assert hist.n == both[d]["received"] and hist.ahead == 0, hist.summary()
                assert 0 < hist.min_ns < 1e6, hist.summary()
            assert SinkHist(t.counters["latency"]).n == t.received  # both, merged
        assert low.counters["bidirectional"][capped]["lost"] == 0
        hit = high.counters["bidirectional"][capped]
        bucket = CAP_PPS // 100
        assert hit["received"] == pytest.approx(CAP_PPS * high.duration_s + bucket, rel=0.03)
        assert hit["loss_location"]["between_ports"] == hit["lost"] > 0
        assert high.loss_location["between_ports"] == hit["lost"]  # the aggregate's too
        view = json.loads(res.stdout)["bidirectional"]
        assert view["loads"][1][capped]["main_location"] == "between_ports"
        assert view["loads"][1][other]["loss_ratio"] == 0
        for d in DIRS:
            rows = view["latency"][d]
            print(d, [(r["rate_pps"], r["p50_ns"], r["p99_ns"]) for r in rows])
            assert [r["rate_pps"] for r in rows] == [BOTH_LOW, BOTH_HIGH]
            assert all(0 < r["p50_ns"] < 1e6 for r in rows), rows
        links = json.loads(sh("ip", "-j", "link", "show", "dev", router.tx).stdout)
        assert "xdp" not in links[0]  # the reverse sink is gone with the run
        show = cli("testbed", "show", tb_name).stdout
        every_probe_came_back(show, "reverse path check (--bidirectional)")
        assert cli("testbed", "down", tb_name).returncode == 0


@pytest.mark.slow
def test_soak_on_an_external_testbed(router, tb_name, tmp_path, cli):
    """soak --testbed: the user's own ports held at one load. Under the hand-made router's
    cap nothing is lost (PASS, no event); over it (40 kpps against 30 kpps) a quarter is,
    all between the ports (FAIL, an event), every second read at the rx port's sink; with
    --bidirectional both sinks count the cap's rate. Knob flags are refused, as for sweep
    and search; after it the sinks are detached."""
    res = cli(*router.args(tb_name))
    assert res.returncode == 0, res.stderr
    db = tmp_path / "soak.db"

    def soak(rate: str, code: int, *extra: str) -> dict:
        r = cli("soak", "--testbed", tb_name, "--rate", rate, "--duration", "4s",
                "--segment-length", "2s", "--db", str(db), "--json", "--fail-on", "fail",
                *extra)  # fmt: skip
        assert r.returncode == code, r.stderr
        return json.loads(r.stdout)

    below = soak("20k", 0)
    print({k: below[k] for k in ("verdict", "loss_ratio", "events", "seconds", "sent")})
    assert below["verdict"] == "PASS" and below["loss_ratio"] == 0.0, below
    assert below["events"] == [] and below["segments_stored"] == 2, below
    above = soak("40k", 11)
    print({k: above[k] for k in ("verdict", "loss_ratio", "events", "loss_location")})
    assert above["verdict"] == "FAIL", above
    assert 0.2 <= above["loss_ratio"] <= 0.3, above  # 1 - 30/40 = 0.25, less the bucket
    lost = above["sent"] - above["forwarded"]
    assert above["loss_location"].get("between_ports") == lost > 0, above
    assert len(above["events"]) >= 1, above
    # both directions at once, 20 kpps each: the router's one cap takes both (it polices
    # all it forwards), so what both sinks counted is the cap's rate and a bucket per
    # segment, all the rest lost between the ports
    both = soak("20k", 11, "--bidirectional", "--retries", "4")
    print(both["bidirectional"])
    assert both["sent"] == 2 * 4 * 20_000 and both["verdict"] == "FAIL", both
    bucket = CAP_PPS // 100
    assert both["forwarded"] == pytest.approx(CAP_PPS * 4 + 2 * bucket, rel=0.03), both
    for d in DIRS:
        part = both["bidirectional"][d]
        assert part["loss_location"].get("between_ports", 0) == part["lost"], part
    with Store(db, readonly=True) as st:
        exps = list(st.experiments())
        assert [e.kind for e in exps] == ["soak", "soak", "soak"]
        for e in exps:
            assert e.metadata["testbed"] == "external" and e.config["testbed_name"] == tb_name
            trials = st.trials(e.id)
            seconds = [s for t in trials for s in t["counters"]["soak"]["per_second"]]
            assert sum(s["received"] for s in seconds) == sum(t["received"] for t in trials)
    knob = cli("soak", "--testbed", tb_name, "--sut", "router", "--rate", "10k")
    assert knob.returncode == 2 and "cannot be given here" in knob.stderr, knob.stderr
    for port in (router.rx, router.tx):
        links = json.loads(sh("ip", "-j", "link", "show", "dev", port).stdout)
        assert "xdp" not in links[0]  # a sink lives as long as the run
    assert cli("testbed", "down", tb_name).returncode == 0


@pytest.mark.slow
def test_a_bidirectional_search_on_an_external_testbed_finds_twice_the_cap(tb_name, tmp_path, cli):
    """search --bidirectional --testbed: the hand-made router's cap C on the forward
    direction's egress only; half of each aggregate load goes each way, so the aggregate
    PDR is 2 (C + bucket / T) with 1 s trials (the embedded test's truth), and the
    reverse direction loses nothing at the loads the search reports."""
    with _hand_router(tb_name, cap_on="out0") as router:
        res = cli(*router.args(tb_name))
        assert res.returncode == 0, res.stderr
        db = tmp_path / "bsearch.db"
        res = cli("search", "--bidirectional", "--testbed", tb_name, "--max-load",
                  f"{round(2.6 * CAP_PPS)}", "--min-load", f"{CAP_PPS}", "--goal", "pdr",
                  "--final-duration", "1s", "--duration-sum", "1s", "--width", "1%",
                  "--no-peak-check", "--db", str(db), "--json", timeout=180)  # fmt: skip
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        (pdr,) = out["goals"]
        truth = 2 * (CAP_PPS + CAP_PPS // 100)  # 2 (C + bucket / 1 s)
        print(pdr["conditional_throughput_pps"], truth, out["bidirectional"])
        assert abs(pdr["conditional_throughput_pps"] - truth) <= 0.02 * truth, (pdr, res.stderr)
        (at,) = out["bidirectional"]["at_lower_bounds"]
        assert at["reverse"]["lost"] == 0 and at["forward"]["loss_ratio"] <= 0.01, at
        with Store(db, readonly=True) as st:
            (exp,) = list(st.experiments())
            trials = st.trial_records(exp.id)
        assert exp.config["bidirectional"] is True and exp.metadata["testbed"] == "external"
        for t in trials:
            both = t.counters["bidirectional"]
            assert t.rate_pps == 2 * both["rate_pps_per_direction"]  # the aggregate load
            assert both["reverse"]["lost"] == 0  # the cap is not on its path
            lost = both["forward"]["lost"]
            assert both["forward"]["loss_location"].get("between_ports", 0) == lost
        assert cli("testbed", "down", tb_name).returncode == 0
