"""System tests of netassay-gen: real namespaces joined by veth, real traffic.

Topology (built and torn down here, every name starts with ``na-``):

    na-g<id>-tg [tg0] --veth-- [rt0] na-g<id>-rt [rt1] --veth-- [sk0] na-g<id>-sk

The router forwards IPv4 and IPv6 with static neighbours; the sink counts test packets
with an nft netdev ingress counter and drops them, and the receive mode counts them on
sk0 (AF_PACKET sees frames before the ingress hook).

The XDP tests use a direct pair ``na-x<id>-tg [tg0] --veth-- [sk0] na-x<id>-sk``
with ``netassay-gen --xdp-sink`` on sk0 (the peer must run an XDP program to take XDP
frames).

A ``--duration`` run stops at its deadline even with packets left (``truncated``), so
the tests that need every planned packet on the wire send a ``--count``.
"""

from __future__ import annotations

import json
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from tests.system.capture import need_generator

from netassay.errors import GeneratorError
from netassay.proc import run
from netassay.testbed.topology import link_mac
from netassay.traffic import generator as gen

pytestmark = pytest.mark.system


need_generator()

V4 = {"src": "198.18.0.2", "dst": "198.19.0.2"}
V6 = {"src": "2001:2::2", "dst": "2001:2:0:1::2"}
PAIR_V4 = {"src": "198.18.0.2", "dst": "198.18.0.3"}
PAIR_V6 = {"src": "2001:2::2", "dst": "2001:2::3"}


def sh(*argv: str, netns: str | None = None, input_text: str | None = None) -> str:
    return run(argv, netns=netns, input_text=input_text).stdout


def gen_argv(
    dst_mac: str,
    fam: dict[str, str],
    rate: str,
    *,
    count: int | None = None,
    duration: str | None = None,
    size: int = 64,
    flows: int = 1,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """netassay-gen's send arguments on tg0, bounded by --count or --duration."""
    bound = ["--count", str(count)] if count is not None else ["--duration", str(duration)]
    argv = ["--dev", "tg0", "--dst-mac", dst_mac, "--src", fam["src"], "--dst", fam["dst"]]
    argv += ["--rate", rate, *bound, "--size", str(size), "--flows", str(flows), "--json"]
    return [*argv, *extra]


@dataclass
class Run:
    """One netassay-gen run: its result (exit 0 or 3), exit code, stderr, wall time."""

    res: gen.GenResult | None
    returncode: int
    stderr: str
    wall_s: float


def run_gen(netns: str, argv: list[str], timeout: float = 60) -> Run:
    full = ["ip", "netns", "exec", netns, gen.find_generator(), *argv]
    t0 = time.monotonic()
    cp = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
    wall = time.monotonic() - t0
    ok_codes = (gen.EXIT_OK, gen.EXIT_RATE)
    res = (
        gen.parse_output(cp.stdout, cp.stderr, cp.returncode) if cp.returncode in ok_codes else None
    )
    return Run(res, cp.returncode, cp.stderr, wall)


def send_count(
    netns: str, dst_mac: str, fam: dict[str, str], rate: str, count: int, **kw
) -> gen.GenResult:
    """Send exactly ``count`` packets (no deadline); returns the result."""
    run = run_gen(netns, gen_argv(dst_mac, fam, rate, count=count, **kw))
    assert run.res is not None, run.stderr
    return run.res


@dataclass
class Bed:
    tg: str
    rt: str
    sk: str
    rt0_mac: str

    def nft_count(self) -> int:
        data = json.loads(sh("nft", "-j", "list", "table", "netdev", "nasink", netns=self.sk))
        total = 0
        for item in data["nftables"]:
            rule = item.get("rule")
            if rule and rule.get("comment") == "test":
                for e in rule["expr"]:
                    if "counter" in e:
                        total += e["counter"]["packets"]
        return total

    def rx_packets(self) -> int:
        link = json.loads(sh("ip", "-j", "-s", "link", "show", "sk0", netns=self.sk))[0]
        return int(link["stats64"]["rx"]["packets"])

    def send(self, fam: dict[str, str], rate: float, duration: float, **kw) -> gen.GenResult:
        return gen.run_generator(
            self.tg, "tg0", self.rt0_mac, fam["src"], fam["dst"], rate, duration, **kw
        )

    def send_count(self, fam: dict[str, str], rate: str, count: int, **kw) -> gen.GenResult:
        return send_count(self.tg, self.rt0_mac, fam, rate, count, **kw)


def _build(bed_id: str) -> Bed:
    tg, rt, sk = (f"na-g{bed_id}-{r}" for r in ("tg", "rt", "sk"))
    for ns in (tg, rt, sk):
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", netns=ns)
    sh("ip", "link", "add", "tg0", "netns", tg, "type", "veth", "peer", "name", "rt0", "netns", rt)
    sh("ip", "link", "add", "rt1", "netns", rt, "type", "veth", "peer", "name", "sk0", "netns", sk)
    for ns, dev, a4, a6 in (
        (tg, "tg0", "198.18.0.2/24", "2001:2::2/64"),
        (rt, "rt0", "198.18.0.1/24", "2001:2::1/64"),
        (rt, "rt1", "198.19.0.1/24", "2001:2:0:1::1/64"),
        (sk, "sk0", "198.19.0.2/24", "2001:2:0:1::2/64"),
    ):
        sh("ip", "addr", "add", a4, "dev", dev, netns=ns)
        sh("ip", "-6", "addr", "add", a6, "dev", dev, "nodad", netns=ns)
        sh("ip", "link", "set", dev, "up", netns=ns)
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1", netns=rt)
    sh("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", netns=rt)
    sk_mac = link_mac(sk, "sk0")
    for addr in (V4["dst"], V6["dst"]):
        neigh = ["ip", "neigh", "replace", addr, "lladdr", sk_mac, "dev", "rt1"]
        sh(*neigh, "nud", "permanent", netns=rt)
    sh(
        "nft",
        "-f",
        "-",
        netns=sk,
        input_text=(
            "table netdev nasink {\n chain in {\n"
            "  type filter hook ingress device sk0 priority 0;\n"
            '  meta l4proto udp udp dport 9 counter drop comment "test"\n'
            " }\n}\n"
        ),
    )
    return Bed(tg, rt, sk, link_mac(rt, "rt0"))


def _teardown(bed_id: str) -> None:
    for r in ("tg", "rt", "sk"):
        subprocess.run(
            ["ip", "netns", "del", f"na-g{bed_id}-{r}"], capture_output=True, check=False
        )


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    bed_id = secrets.token_hex(2)
    try:
        yield _build(bed_id)
    finally:
        _teardown(bed_id)


def kept_or_stalled(res: gen.GenResult, duration_s: float) -> bool:
    """The rate was kept, or its miss is explained by a stall measured in the same run.

    The achieved rate runs from the first to the last send, so a stall of G at the last
    deadline costs about G / duration: on a 0.5 s run a 0.5 ms stall exceeds the 0.1%
    tolerance, and this machine spends ~1% of its time in gaps over 1 ms (measured).
    A miss the run's own largest lateness cannot account for still fails.
    """
    if res.ok:
        return True
    shortfall_ns = abs(res.rate_error or 0.0) * duration_s * 1e9
    return res.sent == res.planned and (res.lateness_max_ns or 0) >= 0.5 * shortfall_ns


def _settle(b: Bed) -> None:
    """Wait until the sink counter stops moving (packets in flight are not lost)."""
    settled(b.nft_count)


def settled(read: Callable[[], int], want: int = -1) -> int:
    """Poll a counter until it reaches ``want`` or stops moving; returns its value."""
    last = -1
    for _ in range(50):
        now = read()
        if now in (want, last):
            return now
        last = now
        time.sleep(0.1)
    return last


@pytest.mark.parametrize(("fam", "size"), [(V4, 64), (V6, 84)], ids=["ipv4", "ipv6"])
@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_million_packets_arrive_exactly(bed: Bed, fam: dict[str, str], size: int) -> None:
    nft0 = bed.nft_count()
    with gen.start_receiver(bed.sk, "sk0", expect=1_000_000, flows=4) as rcv:
        rx0 = bed.rx_packets()
        res = bed.send(fam, 100_000, 10.0, size_bytes=size, flows=4)
        _settle(bed)
        rx = bed.rx_packets() - rx0
        got = rcv.stop()
    nft = bed.nft_count() - nft0
    summary = {k: v for k, v in got.items() if k != "flows"}
    assert res.ok, res.raw
    assert res.planned == res.sent == 1_000_000
    assert abs(res.rate_error) <= 0.001
    assert got["received"] == res.sent, summary
    assert got["lost"] == 0 and got["duplicated"] == 0 and got["reordered"] == 0, summary
    assert got["ring_drops"] == 0, summary
    assert [f["received"] for f in got["flows"]] == [250_000] * 4
    assert nft == res.sent  # test packets counted at the sink's ingress
    # The interface counter also counts foreign frames (IPv6 ND/MLD, ...); the
    # receiver saw every frame while rx was read, so they are among its other frames.
    assert 0 <= rx - res.sent <= got["other_frames"], (rx, summary)
    assert got["latency_ns"]["p50"] > 0


def test_nft_drops_in_the_router_are_reported_as_lost(bed: Bed) -> None:
    # Drop sequences 1000..1499 of every flow in the router: 2 flows -> exactly 1000.
    sh(
        "nft",
        "-f",
        "-",
        netns=bed.rt,
        input_text=(
            "table inet nagaps {\n chain gaps {\n"
            "  type filter hook forward priority 0;\n"
            "  udp dport 9 @th,112,64 1000-1499 counter drop\n }\n}\n"
        ),
    )
    try:
        with gen.start_receiver(bed.sk, "sk0", expect=200_000, flows=2) as rcv:
            res = bed.send_count(V4, "100k", 200_000, flows=2)
            _settle(bed)
            got = rcv.stop()
    finally:
        sh("nft", "delete", "table", "inet", "nagaps", netns=bed.rt)
    assert kept_or_stalled(res, 2.0) and res.sent == 200_000
    assert got["lost"] == 1000, got
    assert got["received"] == 199_000
    assert [f["lost"] for f in got["flows"]] == [500, 500]
    assert got["reordered"] == 0 and got["duplicated"] == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_cleanly_and_reports_what_was_sent(bed: Bed, sig: int) -> None:
    argv = gen.build_args("tg0", bed.rt0_mac, V4["src"], V4["dst"], 50_000, 30.0)
    with gen.start_receiver(bed.sk, "sk0") as rcv:
        p = subprocess.Popen(
            ["ip", "netns", "exec", bed.tg, gen.find_generator(), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        p.send_signal(sig)
        out, _ = p.communicate(timeout=10)
        _settle(bed)
        got = rcv.stop()
    res = json.loads(out)
    assert res["stopped_by_signal"] is True
    assert res["truncated"] is True and res["stop_reason"] == "signal"
    assert 0 < res["sent"] < res["planned"] == 1_500_000
    assert res["shortfall"] == res["planned"] - res["sent"]
    assert got["received"] == res["sent"]
    assert got["lost"] == 0
    assert p.returncode == gen.EXIT_RATE  # not kept: it was stopped


def test_count_run_at_a_rate_it_cannot_keep_sends_every_packet_and_exits_3(bed: Bed) -> None:
    argv = gen_argv(bed.rt0_mac, V4, "20M", count=300_000)
    run = run_gen(bed.tg, argv)
    res = run.res
    assert run.returncode == gen.EXIT_RATE and res is not None, run.stderr
    assert res.ok is False and res.rate_error < -0.001
    assert res.sent == res.planned == 300_000  # no deadline: every packet, late
    assert res.raw["truncated"] is False and res.raw["stop_reason"] == "complete"
    assert res.lateness_p99_ns is not None and res.lateness_p99_ns > 0
    assert "the rate was not kept" in run.stderr
    best = run_gen(bed.tg, [*argv, "--best-effort"])
    assert best.returncode == 0 and best.res is not None
    assert best.res.ok is False  # ok reports the rate; best effort only changes the exit
    assert best.res.sent == 300_000


@pytest.mark.parametrize("best_effort", [True, False], ids=["best-effort", "strict"])
def test_duration_run_stops_at_its_deadline_and_reports_the_shortfall(
    bed: Bed, best_effort: bool
) -> None:
    extra = ("--best-effort",) if best_effort else ()
    run = run_gen(bed.tg, gen_argv(bed.rt0_mac, V4, "20M", duration="1s", extra=extra))
    res = run.res
    assert res is not None, run.stderr
    assert run.wall_s < 2.0, run.wall_s  # not the minutes 20 M packets would take
    assert res.raw["truncated"] is True and res.raw["stop_reason"] == "deadline"
    assert 0 < res.sent < res.planned == 20_000_000
    assert res.raw["shortfall"] == res.planned - res.sent
    assert res.raw["rate_tolerance"] == 0.001
    assert res.stopped_by_signal is False and res.ok is False
    # the deadline is the duration plus 0.1% of it; one send call may end past it
    assert res.duration_s < 1.001, res.raw
    if best_effort:
        assert run.returncode == 0
    else:
        assert run.returncode == gen.EXIT_RATE
        assert "the deadline passed after" in run.stderr and "short" in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_count_run_sends_exactly_n(bed: Bed) -> None:
    nft0 = bed.nft_count()
    with gen.start_receiver(bed.sk, "sk0", expect=30_000, flows=3) as rcv:
        res = bed.send_count(V4, "100k", 30_000, flows=3)
        _settle(bed)
        got = rcv.stop()
    assert res.sent == res.planned == 30_000, res.raw
    assert res.raw["truncated"] is False and res.raw["shortfall"] == 0
    assert res.raw["stop_reason"] == "complete"
    assert got["received"] == 30_000 and got["lost"] == 0
    assert [f["received"] for f in got["flows"]] == [10_000] * 3
    assert bed.nft_count() - nft0 == 30_000


@pytest.mark.parametrize("technique", ["xdp", "none"])
def test_qdisc_is_refused_where_no_frame_passes_a_qdisc(bed: Bed, technique: str) -> None:
    extra = ("--qdisc", "--technique", technique)
    run = run_gen(bed.tg, gen_argv(bed.rt0_mac, V4, "1k", count=10, extra=extra))
    assert run.returncode == gen.EXIT_USAGE and run.res is None
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert f"--qdisc does not apply to --technique {technique}" in run.stderr
    assert "drop --qdisc" in run.stderr


def test_refuses_foreign_destination(bed: Bed) -> None:
    with pytest.raises(GeneratorError, match=r"refused its arguments.*198\.18\.0\.0/15"):
        bed.send({"src": "198.18.0.2", "dst": "10.1.2.3"}, 1000, 0.01)


def test_refuses_the_host_namespace() -> None:
    args = ["--dev", "lo", "--dst-mac", "02:00:00:00:00:01", "--src", "198.18.0.2"]
    args += ["--dst", "198.19.0.2", "--rate", "1k", "--duration", "1"]
    cp = subprocess.run(
        [gen.find_generator(), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert cp.returncode == 2
    assert "host's" in cp.stderr and "--allow-host-netns" in cp.stderr
    assert cp.stdout == ""


@pytest.mark.parametrize("technique", ["sendmmsg", "txring", "xdp"])
def test_every_technique_delivers_exactly_and_says_which_ran(bed: Bed, technique: str) -> None:
    nft0 = bed.nft_count()
    with gen.start_receiver(bed.sk, "sk0", expect=50_000, flows=2) as rcv:
        res = bed.send_count(V4, "100k", 50_000, flows=2, extra=("--technique", technique))
        _settle(bed)
        got = rcv.stop()
    assert res.sent == 50_000 and kept_or_stalled(res, 0.5), res.raw
    assert got["received"] == 50_000 and got["lost"] == 0
    assert bed.nft_count() - nft0 == 50_000
    if technique == "xdp":
        # the router's veth has neither GRO nor an XDP program: XDP frames cannot
        # leave, so it must fall back and say why
        assert res.technique == "af_packet_sendmmsg"
        assert "xdp_live_frames unavailable" in res.raw["fallback_reason"]
    else:
        expected = {"sendmmsg": "af_packet_sendmmsg", "txring": "af_packet_tx_ring"}
        assert res.technique == expected[technique]
        assert res.raw["fallback_reason"] is None


def test_technique_none_paces_and_stamps_but_puts_nothing_on_the_wire(bed: Bed) -> None:
    nft0, rx0 = bed.nft_count(), bed.rx_packets()
    res = bed.send_count(V4, "100k", 50_000, extra=("--best-effort", "--technique", "none"))
    _settle(bed)
    assert res.technique == "pacing_only", res.raw
    assert "nothing sent" in res.raw["technique_reason"]
    assert res.sent == res.planned == 50_000
    assert res.lateness_p99_ns is not None and res.raw["lateness_p50_ns"] >= 0
    assert bed.nft_count() == nft0  # not one test packet reached the sink
    assert bed.rx_packets() - rx0 < 50  # at most foreign frames (IPv6 ND/MLD)


def test_auto_without_an_xdp_peer_sends_with_sendmmsg_and_says_why(bed: Bed) -> None:
    res = bed.send(V4, 600_000, 0.2, best_effort=True)
    assert res.technique == "af_packet_sendmmsg", res.raw
    assert "no XDP program" in res.raw["technique_reason"]
    assert res.raw["fallback_reason"] is None


@dataclass
class Pair:
    """Generator namespace --veth-- sink namespace, no router."""

    tg: str
    sk: str
    sk0_mac: str


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    pid = secrets.token_hex(2)
    tg, sk = f"na-x{pid}-tg", f"na-x{pid}-sk"
    try:
        for ns in (tg, sk):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", netns=ns)
        link = ["ip", "link", "add", "tg0", "netns", tg, "type", "veth"]
        sh(*link, "peer", "name", "sk0", "netns", sk)
        for ns, dev, fam_key in ((tg, "tg0", "src"), (sk, "sk0", "dst")):
            sh("ip", "addr", "add", f"{PAIR_V4[fam_key]}/24", "dev", dev, netns=ns)
            sh("ip", "-6", "addr", "add", f"{PAIR_V6[fam_key]}/64", "dev", dev, "nodad", netns=ns)
        sh("ip", "link", "set", "tg0", "up", netns=tg)
        sh("ip", "link", "set", "sk0", "up", netns=sk)
        yield Pair(tg, sk, link_mac(sk, "sk0"))
    finally:
        for ns in (tg, sk):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_xdp_sink_counts_exactly_what_auto_sends_as_xdp_frames(pair: Pair) -> None:
    with gen.start_xdp_sink(pair.sk, "sk0") as sink:
        assert sink.first["packets"] == 0 and sink.first["attached"] == "sk0"
        assert sink.first["action"] == "drop"
        extra = ("--best-effort",)
        res = send_count(pair.tg, pair.sk0_mac, PAIR_V4, "1M", 500_000, flows=2, extra=extra)
        time.sleep(0.2)
        mid = sink.read()
        final = sink.stop()
    assert res.technique == "xdp_live_frames", res.raw
    assert "runs an XDP program" in res.raw["technique_reason"]
    assert res.sent == 500_000
    # every frame either reached the sink or was counted as an egress drop
    assert final["packets"] == mid["packets"] == res.sent - res.raw["egress_drops"], final
    assert res.raw["egress_drops"] <= res.sent * 0.001
    span = (final["last_ns"] - final["first_ns"]) / 1e9
    assert abs((final["packets"] - 1) / span / 1_000_000 - 1) < 0.02, (final, res.raw)
    assert final["mode"] == "xdp_sink" and final["size_bytes"] == 64
    assert final["action"] == "drop"


def test_xdp_live_frames_carry_unique_increasing_sequences(pair: Pair) -> None:
    # A sink program that matches no 64-byte frame passes them all to the stack, so
    # the peer takes XDP frames and the AF_PACKET receiver still sees each one.
    with gen.start_xdp_sink(pair.sk, "sk0", size_bytes=1000) as sink:
        with gen.start_receiver(pair.sk, "sk0", expect=20_000, flows=2) as rcv:
            extra = ("--technique", "xdp")
            res = send_count(pair.tg, pair.sk0_mac, PAIR_V4, "50k", 20_000, flows=2, extra=extra)
            time.sleep(0.3)
            got = rcv.stop()
        assert sink.stop()["packets"] == 0
    summary = {k: v for k, v in got.items() if k != "flows"}
    assert res.technique == "xdp_live_frames" and kept_or_stalled(res, 0.4), res.raw
    assert res.raw["technique_reason"] == "requested (--technique xdp)"
    assert got["received"] == 20_000 and got["lost"] == 0, summary
    assert got["duplicated"] == 0 and got["reordered"] == 0, summary
    assert [f["received"] for f in got["flows"]] == [10_000] * 2
    assert got["latency_ns"]["p50"] > 0


def test_xdp_sink_refuses_a_second_program(pair: Pair) -> None:
    with (
        gen.start_xdp_sink(pair.sk, "sk0"),
        pytest.raises(GeneratorError, match="did not attach"),
    ):
        gen.start_xdp_sink(pair.sk, "sk0")


@pytest.fixture
def pair_nft(pair: Pair) -> Iterator[Callable[[], int]]:
    """An nft counter of UDP port 9 on sk0's ingress (after XDP); returns its reader."""
    sh(
        "nft",
        "-f",
        "-",
        netns=pair.sk,
        input_text=(
            "table netdev naxbehind {\n chain in {\n"
            "  type filter hook ingress device sk0 priority 0;\n"
            '  meta l4proto udp udp dport 9 counter drop comment "test"\n'
            " }\n}\n"
        ),
    )

    def count() -> int:
        data = json.loads(sh("nft", "-j", "list", "table", "netdev", "naxbehind", netns=pair.sk))
        rules = [i["rule"] for i in data["nftables"] if "rule" in i]
        return sum(e["counter"]["packets"] for r in rules for e in r["expr"] if "counter" in e)

    try:
        yield count
    finally:
        subprocess.run(
            ["ip", "netns", "exec", pair.sk, "nft", "delete", "table", "netdev", "naxbehind"],
            capture_output=True,
            check=False,
        )


def start_sink(p: Pair, size: int, *flags: str) -> gen.XdpSink:
    """``netassay-gen --xdp-sink`` on sk0 with extra flags; returns once attached."""
    full = ["ip", "netns", "exec", p.sk, gen.find_generator(), "--xdp-sink", "--dev", "sk0"]
    full += ["--size", str(size), *flags]
    proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 10.0)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        raise RuntimeError(f"the sink did not attach: {proc.communicate()[1].strip()}")
    return gen.XdpSink(proc, full, json.loads(line))


def send_plain_udp(netns: str, dst: str, payload: bytes, n: int) -> None:
    """Send ``n`` ordinary UDP datagrams to ``dst`` port 9 from a socket in ``netns``."""
    code = (
        "import socket, sys, time\n"
        "fam = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET\n"
        "s = socket.socket(fam, socket.SOCK_DGRAM)\n"
        "for i in range(int(sys.argv[3])):\n"
        "    s.sendto(bytes.fromhex(sys.argv[2]), (sys.argv[1], 9))\n"
        "    if i % 50 == 49:\n"
        "        time.sleep(0.002)\n"
    )
    sh(sys.executable, "-c", code, dst, payload.hex(), str(n), netns=netns)


@pytest.mark.parametrize(("fam", "size"), [(PAIR_V4, 64), (PAIR_V6, 84)], ids=["ipv4", "ipv6"])
def test_xdp_sink_counts_test_frames_and_passes_same_size_frames_without_the_magic(
    pair: Pair, pair_nft: Callable[[], int], fam: dict[str, str], size: int
) -> None:
    payload_len = size - (62 if ":" in fam["dst"] else 42)  # the frame is `size` bytes
    zeros = bytes(payload_len)
    swapped = (0x6E614731).to_bytes(4, "little") + bytes(payload_len - 4)  # wrong order
    with start_sink(pair, size) as sink:
        res = send_count(pair.tg, pair.sk0_mac, fam, "100k", 20_000, size=size, flows=2)
        assert settled(sink.count, 20_000) == 20_000 == res.sent, res.raw
        for payload in (zeros, swapped):
            send_plain_udp(pair.tg, fam["dst"], payload, 300)
        behind = settled(pair_nft, 600)
        final = sink.stop()
    assert res.technique == "af_packet_sendmmsg" and res.raw["egress_drops"] == 0, res.raw
    assert final["packets"] == 20_000, final  # the plain frames were not counted
    assert behind == 600  # they passed to the stack; the test frames were dropped
    assert final["action"] == "drop"


@pytest.mark.parametrize("technique", ["sendmmsg", "xdp"])
def test_xdp_sink_pass_counts_test_frames_and_lets_them_reach_the_stack(
    pair: Pair, pair_nft: Callable[[], int], technique: str
) -> None:
    with start_sink(pair, 64, "--pass") as sink:
        assert sink.first["action"] == "pass"
        extra = ("--technique", technique)
        res = send_count(pair.tg, pair.sk0_mac, PAIR_V4, "100k", 20_000, extra=extra)
        counted = settled(sink.count, 20_000)
        behind = settled(pair_nft, 20_000)
        final = sink.stop()
    assert res.sent == 20_000 and res.raw["egress_drops"] == 0, res.raw
    assert res.technique == ("xdp_live_frames" if technique == "xdp" else "af_packet_sendmmsg")
    assert counted == behind == final["packets"] == 20_000, (counted, behind, final)
    assert final["action"] == "pass"
