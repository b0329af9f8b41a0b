"""PCAP replay (``netassay-gen --pcap``) through a kernel router, its ground truths a
capture tcpdump writes in the test itself.

Topology (built and torn down here, every name starts with ``na-``):

    na-p<id>-tg [tg0] --veth-- [rt0] na-p<id>-rt [rt1] --veth-- [sk0] na-p<id>-sk

1. tcpdump on sk0 captures what netassay-gen (an IMIX of three sizes) and ping send
   through the router; that capture, and the same frames written as pcapng, are
   replayed at a low rate through the router to the XDP sink, which counts each size
   of the capture's marked frames: frames and bytes counted per size equal those the
   generator says it sent marked, exactly (the router drops nothing at this load), and
   the unmarked frames (ICMP) reach sk0 too.
2. A capture of two paced runs (gaps of 0.5 ms and 2 ms) replayed with ``--speed 2``:
   the gaps between the transmit stamps the replayed frames carry follow the
   capture's gaps halved within the generator's own lateness, and a capture of the
   replay (tcpdump on sk0) shows them within 200 us in the median.

Needs root, tcpdump and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import shutil
import signal
import statistics
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.system.capture import need_generator, read_pcap, tcpdump

from netassay.proc import run
from netassay.testbed.topology import link_mac
from netassay.traffic import generator as gen

pytestmark = pytest.mark.system


need_generator()
if shutil.which("tcpdump") is None:
    pytest.skip("tcpdump is not installed: run 'make setup'", allow_module_level=True)

SRC, DST = "198.18.0.2", "198.19.0.2"
MAGIC = 0x6E614731


def sh(*argv: str, netns: str | None = None) -> str:
    return run(argv, netns=netns).stdout


@dataclass
class Bed:
    tg: str
    rt: str
    sk: str
    rt0_mac: str

    def gen(self, *argv: str, netns: str | None = None) -> dict:
        cp = subprocess.run(
            ["ip", "netns", "exec", netns or self.tg, gen.find_generator(), *argv],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert cp.returncode == 0, cp.stderr
        return json.loads(cp.stdout)

    def send(self, *argv: str) -> dict:
        to = ["--dev", "tg0", "--dst-mac", self.rt0_mac, "--src", SRC, "--dst", DST]
        return self.gen(*to, *argv, "--json", "--best-effort")  # the counts are the truth

    def rx_packets(self) -> int:
        link = json.loads(sh("ip", "-j", "-s", "link", "show", "sk0", netns=self.sk))[0]
        return int(link["stats64"]["rx"]["packets"])


def _build(bed_id: str) -> Bed:
    tg, rt, sk = (f"na-p{bed_id}-{r}" for r in ("tg", "rt", "sk"))
    for ns in (tg, rt, sk):
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", netns=ns)
    sh("ip", "link", "add", "tg0", "netns", tg, "type", "veth", "peer", "name", "rt0", "netns", rt)
    sh("ip", "link", "add", "rt1", "netns", rt, "type", "veth", "peer", "name", "sk0", "netns", sk)
    for ns, dev, a4 in (
        (tg, "tg0", "198.18.0.2/24"),
        (rt, "rt0", "198.18.0.1/24"),
        (rt, "rt1", "198.19.0.1/24"),
        (sk, "sk0", "198.19.0.2/24"),
    ):
        sh("ip", "addr", "add", a4, "dev", dev, netns=ns)
        sh("ip", "link", "set", dev, "up", netns=ns)
    sh("ip", "route", "add", "198.18.0.0/15", "via", "198.19.0.1", netns=sk)
    sh("ip", "route", "add", "198.18.0.0/15", "via", "198.18.0.1", netns=tg)
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1", netns=rt)
    sk_mac, tg_mac = link_mac(sk, "sk0"), link_mac(tg, "tg0")
    sh("ip", "neigh", "replace", DST, "lladdr", sk_mac, "dev", "rt1", "nud", "permanent", netns=rt)
    sh("ip", "neigh", "replace", SRC, "lladdr", tg_mac, "dev", "rt0", "nud", "permanent", netns=rt)
    return Bed(tg, rt, sk, link_mac(rt, "rt0"))


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    bed_id = secrets.token_hex(2)
    try:
        yield _build(bed_id)
    finally:
        for r in ("tg", "rt", "sk"):
            subprocess.run(["ip", "netns", "del", f"na-p{bed_id}-{r}"], capture_output=True)


def write_pcapng(records: list[tuple[int, bytes]], path: Path) -> None:
    """The records as pcapng: a section header, one Ethernet interface with
    if_tsresol 9 (ns), an enhanced packet block each."""

    def block(kind: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", kind, n) + body + struct.pack("<I", n)

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    tsresol = struct.pack("<HH", 9, 1) + bytes([9, 0, 0, 0]) + struct.pack("<HH", 0, 0)
    out += block(1, struct.pack("<HHI", 1, 0, 0) + tsresol)
    for ns, data in records:
        head = struct.pack("<IIIII", 0, ns >> 32, ns & 0xFFFFFFFF, len(data), len(data))
        out += block(6, head + data)
    path.write_bytes(out)


@contextmanager
def xdp_sink(bed: Bed, pcap: Path) -> Iterator[subprocess.Popen]:
    argv = ["ip", "netns", "exec", bed.sk, gen.find_generator(), "--xdp-sink", "--dev", "sk0",
            "--pcap", str(pcap)]  # fmt: skip
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        first = p.stdout.readline()
        assert first, p.stderr.read() if p.stderr else ""
        yield p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        p.wait(timeout=10)


def sink_counts(p: subprocess.Popen) -> dict:
    """The sink's last line once stopped (SIGINT)."""
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=10)
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def mix_capture(bed: Bed, tmp_path_factory) -> Path:
    """tcpdump's capture on sk0 of an IMIX of 64, 300 and 1000 bytes netassay-gen sent
    through the router, and of three pings (ICMP, 242 bytes) with their replies."""
    cap = tmp_path_factory.mktemp("pcap") / "mix.pcap"
    with tcpdump(bed.sk, "sk0", cap):
        bed.send("--rate", "2k", "--count", "120", "--imix", "64:3,300:2,1000:1")
        sh("ping", "-c", "3", "-i", "0.05", "-s", "200", DST, netns=bed.tg)
    return cap


def test_a_tcpdump_capture_replays_counted_per_size(bed: Bed, mix_capture: Path, tmp_path: Path):
    cap = mix_capture
    records = read_pcap(cap)
    sizes = sorted({len(d) for _, d in records})
    assert {64, 300, 1000} <= set(sizes) and len(records) >= 126, sizes
    ng = tmp_path / "mix.pcapng"
    write_pcapng(records, ng)
    for path in (cap, ng):
        rx0 = bed.rx_packets()
        with xdp_sink(bed, path) as sink:
            sent = bed.send("--pcap", str(path), "--rate", "5k", "--count", "3000")
            counted = sink_counts(sink)
        print(path.name, sent["sent_per_size"], sent["marked_per_size"], counted)
        assert sent["sent"] == 3000 and sent["pcap_skipped"]["not_ip"] == 0
        # every marked frame the generator sent reached the sink, per size, and bytes
        marked = {int(s): n for s, n in sent["marked_per_size"].items()}
        got = {int(s): n for s, n in counted["per_size"].items() if n}
        assert got == marked and set(got) == {64, 300, 1000}
        assert sum(s * n for s, n in got.items()) == sent["marked_bytes"]
        assert counted["packets"] == sent["marked"] < sent["sent"]
        # the ping frames (ICMP: not marked) were sent too, uncounted by the sink
        assert sent["sent_per_size"].get("242", 0) > 0
        assert bed.rx_packets() > rx0
    # the pcapng's frames are the libpcap's: the same sent per size
    assert sent["pcap_frames"] == len(records)


def _stamps(records: list[tuple[int, bytes]]) -> list[tuple[int, int, int]]:
    """(sequence, transmit stamp, arrival) of the netassay frames (IPv4 UDP)."""
    out = []
    for ns, d in records:
        if len(d) >= 64 and d[23] == 17 and struct.unpack_from(">I", d, 42)[0] == MAGIC:
            seq, ts = struct.unpack_from(">QQ", d, 48)
            out.append((seq, ts, ns))
    return out


def test_speed_keeps_the_captured_gaps_scaled(bed: Bed, tmp_path: Path):
    cap = tmp_path / "gaps.pcap"
    with tcpdump(bed.sk, "sk0", cap, "udp"):
        bed.send("--rate", "2k", "--count", "20", "--size", "128")
        bed.send("--rate", "500", "--count", "20", "--size", "256")
    original = read_pcap(cap)
    assert len(original) == 40
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(original)]
    replay = tmp_path / "replay.pcap"
    speed = 2.0
    with tcpdump(bed.sk, "sk0", replay, "udp"):
        sent = bed.send("--pcap", str(cap), "--speed", str(speed), "--count", "80")
    assert sent["sent"] == 80 and sent["speed"] == speed
    got = _stamps(read_pcap(replay))
    assert [s for s, _, _ in got] == list(range(80))  # every frame, in order
    # the loop: 40 frames, then one mean gap, then the same 40 again
    mean = round((original[-1][0] - original[0][0]) / 39)
    want = [g / speed for g in gaps] + [mean / speed] + [g / speed for g in gaps]
    late = sent["lateness_max_ns"]
    tx_err = [abs((b[1] - a[1]) - w) for (a, b, w) in zip(got, got[1:], want, strict=False)]
    rx_err = [abs((b[2] - a[2]) - w) for (a, b, w) in zip(got, got[1:], want, strict=False)]
    print(
        "lateness max", late, "tx gap err max", max(tx_err), "rx median", statistics.median(rx_err)
    )
    # a gap is off by at most the larger lateness of its two frames (and the rounding
    # of the capture's time to the schedule's ns)
    assert max(tx_err) <= late + 2
    assert statistics.median(rx_err) <= 200_000
    # the gaps differ: 0.25 ms and 1 ms after scaling, not an even pace
    assert min(want) < 300_000 < 900_000 < max(want)


def test_a_capture_with_no_frame_to_send_is_one_line(bed: Bed, tmp_path: Path):
    arp = tmp_path / "arp.pcap"
    with tcpdump(bed.tg, "tg0", arp, "arp"):
        sh("ip", "neigh", "flush", "dev", "tg0", netns=bed.tg)
        sh("ping", "-c", "1", "-W", "1", "198.18.0.1", netns=bed.tg)
    argv = ["ip", "netns", "exec", bed.tg, gen.find_generator(), "--dev", "tg0", "--dst-mac",
            bed.rt0_mac, "--src", SRC, "--dst", DST, "--pcap", str(arp), "--rate", "1k",
            "--count", "10"]  # fmt: skip
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode == gen.EXIT_USAGE, cp
    assert cp.stdout == "" and len(cp.stderr.strip().splitlines()) == 1
    assert "none of its" in cp.stderr and "not_ip" in cp.stderr, cp.stderr


def test_a_sweep_of_a_capture_counts_every_marked_frame_per_size(
    mix_capture: Path, tb_name: str, tmp_path: Path, cli
):
    """The sweep on the kernel router testbed replays the capture at two low loads: the
    router drops nothing there, so every marked frame of every size reaches the sink;
    the experiment keeps the file's path, sha256 and frame-size mix."""
    db = tmp_path / "pcap.db"
    res = cli(
        "sweep", "--name", tb_name, "--sut", "router", "--pcap", mix_capture, "--rates",
        "2000,5000", "--runs", "2", "--duration", "1s", "--settle", "0.2s", "--no-peak-check",
        "--db", db, "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    from netassay.store.db import Store

    with Store(db, readonly=True) as store:
        (exp,) = list(store.experiments())
        trials = store.trial_records(exp.id)
    meta = exp.metadata["pcap"]
    assert meta["sha256"] == hashlib.sha256(mix_capture.read_bytes()).hexdigest()
    assert meta["path"] == str(mix_capture) and meta["frames"] == len(read_pcap(mix_capture))
    assert {"64", "300", "1000", "242"} <= set(meta["per_size"])
    assert len(trials) == 4
    for t in trials:
        sizes = t.counters["pcap"]["sizes"]
        print(t.rate_pps, t.sent, t.received, sizes, t.warnings)
        assert not t.excluded, t.warnings
        assert t.sent == t.received > 0
        assert all(n["received"] == n["marked"] for n in sizes.values())
        assert sum(n["marked"] for n in sizes.values()) == t.sent
        assert sizes["242"]["sent"] > 0 == sizes["242"]["marked"]  # the pings: sent, uncounted
