"""Benchmark the PCAP replay of netassay-gen (``--pcap``): a capture made here with
tcpdump, replayed at a rate and on its own gaps, in one run.

Builds ``na-q<id>-tg [tg0] --veth-- [sk0] na-q<id>-sk`` (deleted even on failure).

* the capture: tcpdump (ns stamps) on sk0 while netassay-gen sends TRex's IMIX
  (``--imix simple``) at 20k, 5k and 1k frames/s, one run after the other: 1200 frames
  of 64, 590 and 1514 bytes with the gaps the generator and the kernel gave them.
* rate: that capture replayed at ``--rate 100k`` for 2 s (generator on CPU 0, at the
  priority netassay's trials give it: ``nice -n -20``) into the
  XDP sink counting its sizes (``--xdp-sink --pcap``, every frame of it is marked);
  the rate error at the sink is (count - 1) / (last - first arrival) against 100k,
  beside the generator's own rate error and lateness. 3 repetitions.
* gaps: the capture replayed once with ``--speed 1`` while tcpdump captures it on sk0
  (no XDP program there, so every frame reaches the tap); each gap between two
  consecutive frames against the captured one: |error| of the transmit stamps the
  frames carry (the generator's pacing) and of the arrival times (what a receiver
  sees), median and p99.

Writes bench/results/pcap.json and prints it.
Run: ``sudo .venv/bin/python bench/pcap.py``
"""

from __future__ import annotations

import itertools
import json
import platform
import secrets
import signal
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # tests.system.capture: tcpdump and its files

from tests.system.capture import read_pcap, tcpdump  # noqa: E402

from netassay.proc import run  # noqa: E402
from netassay.testbed.topology import link_mac  # noqa: E402
from netassay.traffic import generator as gen  # noqa: E402

OUT = ROOT / "bench" / "results" / "pcap.json"
SRC, DST = "198.18.0.1", "198.18.0.2"
MAGIC = 0x6E614731
RATE = 100_000


def sh(*argv: str, netns: str | None = None) -> str:
    return run(argv, netns=netns, timeout=60).stdout


def build(tg: str, sk: str) -> str:
    """The two namespaces joined by tg0 -- sk0; the sink's MAC."""
    for ns in (tg, sk):
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", netns=ns)
    sh("ip", "link", "add", "tg0", "netns", tg, "type", "veth", "peer", "name", "sk0", "netns", sk)
    for ns, dev, addr in ((tg, "tg0", SRC), (sk, "sk0", DST)):
        sh("ip", "addr", "add", f"{addr}/30", "dev", dev, netns=ns)
        sh("ip", "link", "set", dev, "up", netns=ns)
    mac = link_mac(sk, "sk0")
    sh("ip", "neigh", "replace", DST, "lladdr", mac, "dev", "tg0", netns=tg)
    return mac


def send(tg: str, mac: str, *argv: str) -> dict[str, Any]:
    to = ["--dev", "tg0", "--dst-mac", mac, "--src", SRC, "--dst", DST]
    # at the priority netassay's trials give it (gen.PRIORITY), on CPU 0
    full = ["ip", "netns", "exec", tg, *gen.PRIORITY, "taskset", "-c", "0", gen.find_generator(),
            *to, *argv, "--json", "--best-effort"]  # fmt: skip
    cp = subprocess.run(full, capture_output=True, text=True, timeout=120, check=False)
    if cp.returncode != 0:
        raise RuntimeError(cp.stderr.strip())
    return json.loads(cp.stdout)


def sink_rate(sk: str, pcap: Path, tg: str, mac: str) -> dict[str, Any]:
    argv = ["ip", "netns", "exec", sk, gen.find_generator(), "--xdp-sink", "--dev", "sk0",
            "--pcap", str(pcap)]  # fmt: skip
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        p.stdout.readline()
        res = send(tg, mac, "--pcap", str(pcap), "--rate", str(RATE), "--duration", "2")
        time.sleep(0.3)
    finally:
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=10)
    line = json.loads(out.strip().splitlines()[-1])
    n, span = line["packets"], (line["last_ns"] - line["first_ns"]) / 1e9
    at_sink = (n - 1) / span if span > 0 else 0.0
    return {
        "sent": res["sent"],
        "marked": res["marked"],
        "counted": n,
        "sink_rate_pps": at_sink,
        "sink_rate_error": at_sink / RATE - 1,
        "gen_rate_error": res["rate_error"],
        "lateness_p50_ns": res["lateness_p50_ns"],
        "lateness_p99_ns": res["lateness_p99_ns"],
        "lateness_max_ns": res["lateness_max_ns"],
    }


def quantiles(v: list[float]) -> dict[str, float]:
    s = sorted(v)
    return {
        "median_ns": statistics.median(s),
        "p99_ns": s[min(len(s) - 1, int(0.99 * len(s)))],
        "max_ns": s[-1],
        "n": len(s),
    }


def gaps(sk: str, tg: str, mac: str, cap: Path, tmp: Path) -> dict[str, Any]:
    original = read_pcap(cap)
    want = [b[0] - a[0] for a, b in itertools.pairwise(original)]
    replay = tmp / "replay.pcap"
    with tcpdump(sk, "sk0", replay, "udp", buffer_kib=65536):
        res = send(tg, mac, "--pcap", str(cap), "--speed", "1", "--count", str(len(original)))
    got = []
    for ns, d in read_pcap(replay):
        if struct.unpack_from(">I", d, 42)[0] == MAGIC:
            seq, ts = struct.unpack_from(">QQ", d, 48)
            got.append((seq, ts, ns))
    seqs = [s for s, _, _ in got]
    pairs = [(a, b, w) for a, b, w in zip(got, got[1:], want, strict=False) if b[0] == a[0] + 1]
    return {
        "frames": len(original),
        "captured_back": len(got),
        "in_order": seqs == sorted(seqs),
        "captured_gap_median_ns": statistics.median(want),
        "tx_gap_error": quantiles([abs((b[1] - a[1]) - w) for a, b, w in pairs]),
        "rx_gap_error": quantiles([abs((b[2] - a[2]) - w) for a, b, w in pairs]),
        "gen_lateness_p99_ns": res["lateness_p99_ns"],
        "gen_lateness_max_ns": res["lateness_max_ns"],
        "duration_s": res["duration_s"],
    }


def main() -> None:
    bid = secrets.token_hex(2)
    tg, sk = f"na-q{bid}-tg", f"na-q{bid}-sk"
    tmp = Path(f"/tmp/na-pcap-bench-{bid}")
    tmp.mkdir()
    try:
        mac = build(tg, sk)
        cap = tmp / "imix.pcap"
        with tcpdump(sk, "sk0", cap, "udp", buffer_kib=65536):
            for rate, count in (("20k", 600), ("5k", 360), ("1k", 240)):
                send(tg, mac, "--imix", "simple", "--rate", rate, "--count", str(count))
        records = read_pcap(cap)
        sizes: dict[int, int] = {}
        for _, d in records:
            sizes[len(d)] = sizes.get(len(d), 0) + 1
        rates = [sink_rate(sk, cap, tg, mac) for _ in range(3)]
        result = {
            "command": "sudo .venv/bin/python bench/pcap.py",
            "kernel": platform.release(),
            "loadavg": Path("/proc/loadavg").read_text().split()[:3],
            "capture": {"frames": len(records), "sizes": sizes, "by": "tcpdump 4.99 on sk0"},
            "rate_100k": {
                "runs": rates,
                "sink_rate_error_median": statistics.median(r["sink_rate_error"] for r in rates),
                "gen_rate_error_median": statistics.median(r["gen_rate_error"] for r in rates),
            },
            "speed_1": gaps(sk, tg, mac, cap, tmp),
        }
    finally:
        for ns in (tg, sk):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
