"""Benchmark netassay-gen against trafgen and iperf3, side by side, in one run.

64-byte frames, one generator core (CPU 0). Writes bench/results/generator.json and
prints it. Needs root; builds its own ``na-b<id>-*`` namespaces and deletes them even
on failure.

* peak: generator namespace --veth--> sink namespace; the sink only counts and drops:
  ``netassay-gen --xdp-sink`` (an XDP count-and-drop program on the sink veth), the
  same for netassay-gen and trafgen (whose frame carries netassay-gen's payload magic,
  which the sink counts by; iperf3's datagrams cannot, so iperf3's peak is the nft
  sink's round's). Each tool runs best effort; the rate is the sink counter's
  increase over a window in the steady state. 3 repetitions, medians. netassay-gen
  runs ``--technique auto`` (XDP live frames, as the peer runs an XDP program) and,
  for comparison, sendmmsg and txring. One more round with the older nft sink
  (netdev ingress counter + drop, no XDP) for the three tools.
* accuracy: netassay-gen and trafgen asked for 10%, 50% and 90% of their own peak;
  the XDP sink (fresh per point) counts and keeps the first and last arrival time,
  so the rate error at the sink is (count - 1) / (last - first) against the request
  for both; netassay-gen's own rate error and lateness, and beside them its pacing
  floor: the same schedule on the same CPU with nothing sent (``--technique none``),
  with the real run's batch and with one packet per call, i.e. the lateness this CPU
  alone (other tenants, interrupts, the hypervisor) imposes on any pacer. The XDP sink
  drops before any AF_PACKET tap, so there is no per-packet arrival lateness here.
* receiver: netassay-gen at its peak with ``--receive`` counting on the sink (other
  CPU), nft sink (frames must reach the tap, so no XDP: auto sends with sendmmsg):
  does the receive mode count every packet the sink counted (no ring drops)?
* router: netassay-gen through a router namespace (kernel forwarding, its receive
  work on the other CPU by RPS, no XDP on the router, so auto sends with sendmmsg),
  XDP sink behind it, the generator sending through a pfifo qdisc with ``--qdisc``
  as in the testbed (without it a full router backlog is a send error the generator
  retries, and no loss is ever seen): the highest rate with zero loss (binary search).

* flows: netassay-gen's peak (auto: XDP live frames, and sendmmsg) at 1 flow and at
  1,000,000 flows in a random order, each flow a 5-tuple of its own (source ports, then
  addresses), the rounds interleaved: what a million tuples cost the generator.

* versus a baseline (``--baseline PATH``, another build of netassay-gen, say main's):
  only netassay-gen, this build and the baseline run after run (peaks of auto, sendmmsg
  and txring into the XDP sink, and of auto and sendmmsg with 1,000,000 flows in a
  random order; then paced runs at 10%, 50% and 90% of this build's
  auto peak, the sink's rate error and the generator's p99 lateness), each figure's
  median per build and the ratio this / baseline. Writes
  bench/results/generator-versus.json (or ``--out``). ``--this PATH`` compares another
  build in this build's place (two older builds, to find which change moved a figure).
  A baseline older than ``--flow-order`` has no flow peaks; the JSON says so.

Run: ``sudo .venv/bin/python bench/generator.py [--quick] [--baseline PATH [--this PATH]]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.proc import run  # noqa: E402
from netassay.testbed.receive import THROUGH_QDISC as GEN_FLAGS  # noqa: E402
from netassay.testbed.topology import WIRE_QDISC, link_mac  # noqa: E402
from netassay.traffic import generator as gen  # noqa: E402

OUT = ROOT / "bench" / "results" / "generator.json"
GEN_CPU = "0"  # set in main(): the quieter CPU
OTHER_CPU = "1"
SRC4, DST4 = "198.18.0.1", "198.18.0.2"
PAYLOAD = 22  # UDP payload of a 64-byte IPv4 frame without FCS
MAGIC = 0x6E614731  # netassay-gen's payload magic: the XDP sink counts frames that carry it


def sh(*argv: str, netns: str | None = None, input_text: str | None = None) -> str:
    return run(argv, netns=netns, input_text=input_text, timeout=60).stdout


SINK_NFT = """table netdev nabench {{
 chain in {{
  type filter hook ingress device {dev} priority 0;
  udp length 30 counter drop comment "test"
 }}
}}
"""


def nft_count(netns: str) -> int:
    data = json.loads(sh("nft", "-j", "list", "table", "netdev", "nabench", netns=netns))
    for item in data["nftables"]:
        rule = item.get("rule")
        if rule and rule.get("comment") == "test":
            for e in rule["expr"]:
                if "counter" in e:
                    return int(e["counter"]["packets"])
    raise RuntimeError("sink counter not found")


def add_veth(ns_a: str, a: str, ns_b: str, b: str) -> None:
    sh("ip", "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b, "netns", ns_b)
    sh("ip", "link", "set", a, "up", netns=ns_a)
    sh("ip", "link", "set", b, "up", netns=ns_b)


def make_ns(*names: str) -> None:
    for ns in names:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", netns=ns)


def pair(tg: str, sk: str) -> str:
    """The generator's and the sink's namespaces, joined by a veth pair (tg0, sk0) with
    their addresses and the sink's MAC as the generator's neighbour; the sink's MAC."""
    make_ns(tg, sk)
    add_veth(tg, "tg0", sk, "sk0")
    sh("ip", "addr", "add", f"{SRC4}/30", "dev", "tg0", netns=tg)
    sh("ip", "addr", "add", f"{DST4}/30", "dev", "sk0", netns=sk)
    sink_mac = link_mac(sk, "sk0")
    sh("ip", "neigh", "replace", DST4, "lladdr", sink_mac, "dev", "tg0", netns=tg)
    return sink_mac


def del_ns(names: list[str]) -> None:
    for ns in names:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def pinned(netns: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", netns, "taskset", "-c", GEN_CPU, *argv]


def window_rate(
    count: Callable[[], int], proc: subprocess.Popen[str], warm: float, span: float
) -> float:
    """Sink packets/s over [warm, warm + span] s after the tool started."""
    time.sleep(warm)
    t0, c0 = time.monotonic(), count()
    time.sleep(span)
    t1, c1 = time.monotonic(), count()
    if proc.poll() is not None:
        raise RuntimeError(f"{proc.args} ended early: {proc.communicate()[1][-300:]}")
    return (c1 - c0) / (t1 - t0)


def _signal_group(proc: subprocess.Popen[str], sig: int) -> None:
    """Signal the tool and its children (trafgen forks workers); its own group only."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def stop(proc: subprocess.Popen[str], timeout: float = 15.0) -> tuple[str, str]:
    _signal_group(proc, signal.SIGINT)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.communicate()


def popen(argv: list[str]) -> subprocess.Popen[str]:
    """Start a tool in its own process group, so that stop() reaches all of it."""
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def run_tool(argv: list[str], timeout: float) -> tuple[str, str, float]:
    """Run a tool to its end (or stop it after ``timeout``); returns out, err, wall s."""
    t0 = time.monotonic()
    p = popen(argv)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = stop(p)
    return out, err, time.monotonic() - t0


def trafgen_cfg(path: Path, dst_mac: str) -> None:
    """trafgen's frame: netassay-gen's, its payload starting with netassay-gen's magic,
    which the XDP sink counts frames by (zeros after it)."""
    path.write_text(
        f"{{ eth(da={dst_mac}), ipv4(saddr={SRC4}, daddr={DST4}, ttl=64), "
        f"udp(sp=10000, dp=9), const32({MAGIC:#x}), fill(0, {PAYLOAD - 4}) }}\n"
    )


class Tools:
    def __init__(self, tg: str, sk: str, sink_mac: str, cfg: Path, warm: float, span: float):
        self.tg, self.sk, self.mac, self.cfg = tg, sk, sink_mac, cfg
        self.warm, self.span = warm, span
        self.total = warm + span + 1.0
        self.count: Callable[[], int] = lambda: nft_count(sk)
        self.last: dict[str, Any] = {}
        self.binary: str | None = None  # netassay-gen to measure (None: this build's)

    def gen_argv(self, rate: str, duration: float, extra: list[str] | None = None) -> list[str]:
        return pinned(
            self.tg,
            [self.binary or gen.find_generator(), "--dev", "tg0", "--dst-mac", self.mac]
            + ["--src", SRC4]
            + ["--dst", DST4, "--rate", rate, "--duration", f"{duration}s", "--json"]
            + (extra or []),
        )

    def peak_netassay(self, technique: str = "auto", extra: list[str] | None = None) -> float:
        extra = ["--burst", "256", "--technique", technique, *(extra or [])]
        p = popen(self.gen_argv("max", self.total, extra))
        r = window_rate(self.count, p, self.warm, self.span)
        out, _err = stop(p)
        res = json.loads(out)
        self.last = {k: res.get(k) for k in ("technique", "technique_reason", "egress_drops")}
        return r

    def trafgen_argv(self, extra: list[str] | None = None) -> list[str]:
        argv = ["trafgen", "-i", str(self.cfg), "-o", "tg0", "-P", "1", "-Q", "-C"]
        return pinned(self.tg, argv + (extra or []))

    def peak_trafgen(self) -> float:
        p = popen(self.trafgen_argv())
        r = window_rate(self.count, p, self.warm, self.span)
        stop(p)
        return r

    def peak_iperf3(self) -> float:
        srv = popen(["ip", "netns", "exec", self.sk, "iperf3", "-s", "-1", "-B", DST4])
        time.sleep(0.5)
        try:
            argv = ["iperf3", "-c", DST4, "-u", "-b", "0", "-l", str(PAYLOAD)]
            p = popen(pinned(self.tg, [*argv, "-t", str(int(self.total + 1))]))
            r = window_rate(self.count, p, self.warm + 0.5, self.span)
            stop(p)
        finally:
            stop(srv, 5)
        return r


def receiver_at_peak(t: Tools, duration: float) -> dict[str, Any]:
    """Can the receive mode (on the other CPU) count everything at the generator's peak?"""
    rcv = gen.start_receiver(t.sk, "sk0", extra=["--cpu", OTHER_CPU])
    c0 = nft_count(t.sk)
    try:
        out, _, _ = run_tool(t.gen_argv("max", duration, ["--burst", "256"]), duration + 20)
        res = json.loads(out)
        time.sleep(0.3)
    finally:
        got = rcv.stop()
    sink = nft_count(t.sk) - c0
    return {
        "technique": res["technique"],
        "generator_sent": res["sent"],
        "generator_rate_pps": res["achieved_rate_pps"],
        "sink_count": sink,
        "receiver_received": got["received"],
        "receiver_lost": got["lost"],
        "receiver_ring_drops": got["ring_drops"],
        "receiver_counts_all": got["received"] == sink and got["ring_drops"] == 0,
        "latency_ns": got["latency_ns"],
    }


def accuracy_point(t: Tools, tool: str, rate: float, duration: float) -> dict[str, Any]:
    """One paced run into a fresh XDP sink; the sink's count and arrival span."""
    sink = gen.start_xdp_sink(t.sk, "sk0")
    row: dict[str, Any] = {"tool": tool, "requested_pps": rate}
    try:
        if tool == "netassay-gen":
            out, _, _ = run_tool(
                t.gen_argv(str(int(rate)), duration, ["--best-effort", "--burst", "1024"]),
                duration * 3 + 20,
            )
            res = json.loads(out)
            row.update(
                sent=res["sent"],
                own_rate_error=res["rate_error"],
                own_lateness_p50_ns=res["lateness_p50_ns"],
                own_lateness_p99_ns=res["lateness_p99_ns"],
                own_lateness_max_ns=res["lateness_max_ns"],
                egress_drops=res.get("egress_drops"),
                ok=res["ok"],
                technique=res["technique"],
                batch=res.get("batch"),
            )
            row.update(pacing_floor(t, rate, duration, res.get("batch") or 1))
        else:
            n = int(rate * duration)
            _, _, wall = run_tool(
                t.trafgen_argv(["-b", f"{int(rate)}pps", "-n", str(n)]), duration * 5 + 10
            )
            row.update(sent=n, wall_s=wall)
        time.sleep(0.3)
        got = sink.stop()
    finally:
        sink.close()
    n, first, last = got.get("packets", 0), got.get("first_ns", 0), got.get("last_ns", 0)
    row["sink_count"] = n
    row["sink_rate_pps"] = (n - 1) / (last - first) * 1e9 if n > 1 and last > first else None
    row["sink_rate_error"] = row["sink_rate_pps"] / rate - 1 if row["sink_rate_pps"] else None
    return row


def pacing_floor(t: Tools, rate: float, duration: float, batch: int) -> dict[str, Any]:
    """The same schedule on the same CPU with nothing sent (``--technique none``): the
    lateness this CPU alone costs, with the real run's batch and with one packet a call.
    """
    row: dict[str, Any] = {}
    for key, b in (("floor_same_batch", batch), ("floor_batch_1", 1)):
        extra = ["--best-effort", "--burst", "1024", "--technique", "none", "--batch", str(b)]
        out, _, _ = run_tool(t.gen_argv(str(int(rate)), duration, extra), duration * 3 + 20)
        res = json.loads(out)
        row[f"{key}_lateness_p50_ns"] = res["lateness_p50_ns"]
        row[f"{key}_lateness_p99_ns"] = res["lateness_p99_ns"]
        row[f"{key}_rate_error"] = res["rate_error"]
    return row


def router_search(quick: bool, bid: str, peak: float) -> dict[str, Any]:
    tg, rt, sk = f"na-b{bid}-rtg", f"na-b{bid}-rrt", f"na-b{bid}-rsk"
    names = [tg, rt, sk]
    sink: gen.XdpSink | None = None
    try:
        make_ns(*names)
        add_veth(tg, "tg0", rt, "rt0")
        add_veth(rt, "rt1", sk, "sk0")
        sh("ip", "addr", "add", "198.18.0.1/24", "dev", "tg0", netns=tg)
        sh("ip", "addr", "add", "198.18.0.254/24", "dev", "rt0", netns=rt)
        sh("ip", "addr", "add", "198.19.0.254/24", "dev", "rt1", netns=rt)
        sh("ip", "addr", "add", "198.19.0.2/24", "dev", "sk0", netns=sk)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", netns=rt)
        neigh = ["ip", "neigh", "replace", "198.19.0.2", "lladdr", link_mac(sk, "sk0")]
        sh(*neigh, "dev", "rt1", "nud", "permanent", netns=rt)
        mask = format(1 << int(OTHER_CPU), "x")
        sh("tee", "/sys/class/net/rt0/queues/rx-0/rps_cpus", netns=rt, input_text=mask + "\n")
        # the testbed's wire: a queueing qdisc and --qdisc, so that the router's full
        # backlog is loss, not a send error the generator retries (which would hide it)
        sh("tc", "qdisc", "replace", "dev", "tg0", "root", *WIRE_QDISC, netns=tg)
        sink = gen.start_xdp_sink(sk, "sk0")
        mac = link_mac(rt, "rt0")
        duration = 1.0 if quick else 2.0
        trials = []

        def trial(rate: float) -> bool:
            assert sink is not None
            c0 = sink.count()
            argv = [gen.find_generator(), "--dev", "tg0", "--dst-mac", mac, "--src", SRC4]
            argv += ["--dst", "198.19.0.2", "--rate", str(int(rate))]
            argv += ["--duration", f"{duration}s", "--json", "--best-effort", *GEN_FLAGS]
            out, _, _ = run_tool(pinned(tg, argv), 60)
            res = json.loads(out)
            last, cnt = -1, sink.count()
            while cnt != last:
                time.sleep(0.1)
                last, cnt = cnt, sink.count()
            lost = res["sent"] - (cnt - c0)
            good = res["ok"] and lost == 0
            trials.append(
                {
                    "rate_pps": rate,
                    "sent": res["sent"],
                    "received": cnt - c0,
                    "lost": lost,
                    "rate_error": res["rate_error"],
                    "lateness_p99_ns": res["lateness_p99_ns"],
                    "ok": res["ok"],
                    "technique": res["technique"],
                    "retries": res["retries"],
                }
            )
            return good

        lo, hi = 0.0, peak
        if trial(hi):
            lo = hi
        else:
            guess = 50_000.0
            while guess < hi and trial(guess):
                lo, guess = guess, guess * 2
            hi = min(hi, guess)
            while hi - lo > max(0.01 * lo, 5_000):
                mid = round((lo + hi) / 2, -3)
                if trial(mid):
                    lo = mid
                else:
                    hi = mid
        return {"zero_loss_rate_pps": lo, "first_loss_rate_pps": hi, "trials": trials}
    finally:
        if sink is not None:
            sink.close()
        del_ns(names)


def cpu_stalls(cpu: int, seconds: float = 0.5) -> float:
    """Share of time a busy loop pinned to ``cpu`` did not run (gaps > 50 us): how much
    other work (other tenants, interrupts, the hypervisor) this CPU carries."""
    me = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        clock, lost = time.monotonic_ns, 0
        end = clock() + int(seconds * 1e9)
        last = clock()
        while last < end:
            now = clock()
            if now - last > 50_000:
                lost += now - last
            last = now
        return lost / (seconds * 1e9)
    finally:
        os.sched_setaffinity(0, me)


def pick_cpus(seconds: float = 0.3) -> dict[int, float]:
    """Put the generator on the CPU that other work leaves most alone right now (this
    machine is shared); the receiver and the router's receive work go to the other."""
    global GEN_CPU, OTHER_CPU
    n = min(os.cpu_count() or 1, 2)
    stalls = {c: cpu_stalls(c, seconds) for c in range(n)}
    GEN_CPU = str(min(stalls, key=lambda c: stalls[c]))
    OTHER_CPU = str(1 - int(GEN_CPU)) if n > 1 else GEN_CPU
    return stalls


def environment() -> dict[str, Any]:
    def version(argv: list[str]) -> str:
        try:
            cp = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return (cp.stdout + cp.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "unknown"

    return {
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu_model": next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            "unknown",
        ),
        "netassay_gen": version([gen.find_generator(), "--version"]),
        "trafgen": version(["trafgen", "-v"]),
        "iperf3": version(["iperf3", "--version"]),
        "generator_cpu": int(GEN_CPU),
        "other_cpu": int(OTHER_CPU),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "frame_bytes": 64,
    }


def targets(r: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, checked against what was measured."""
    peak = r["peak"]
    own = [a for a in r["accuracy"] if a["tool"] == "netassay-gen"]
    half = next(a for a in own if a["fraction_of_peak"] == 0.5)
    return {
        "peak_ge_2x_trafgen": peak["ratio_vs_trafgen"] >= 2.0,
        "peak_ge_2x_trafgen_best_sink": peak["ratio_vs_trafgen_best_sink"] >= 2.0,
        "peak_ge_3x_iperf3_best_sink": peak["ratio_vs_iperf3_best_sink"] >= 3.0,
        "rate_error_le_0.1pct_everywhere": all(
            abs(a["own_rate_error"]) <= 0.001
            and a["sink_rate_error"] is not None
            and abs(a["sink_rate_error"]) <= 0.001
            for a in own
        ),
        "lateness_p99_lt_20us_at_half_peak": (half["own_lateness_p99_ns"] or 0) < 20_000,
        # what this CPU allows any pacer at that point: nothing sent, one packet a call
        "lateness_p99_floor_at_half_peak_ns": half.get("floor_batch_1_lateness_p99_ns"),
        "technique_at_peak": peak["netassay_gen_auto"].get("technique"),
    }


# The peaks --baseline compares: (technique, extra flags) by name. A million flows in a
# random order (each a 5-tuple of its own) as well as one: both builds must take --flows
# up to 1M.
_MANY = ["--flows", "1000000", "--flow-order", "random"]
VERSUS_PEAKS: dict[str, tuple[str, list[str] | None]] = {
    "auto": ("auto", None),
    "sendmmsg": ("sendmmsg", None),
    "txring": ("txring", None),
    "auto, 1M random flows": ("auto", _MANY),
    "sendmmsg, 1M random flows": ("sendmmsg", _MANY),
}


def versus(
    baseline: str, reps: int, warm: float, span: float, duration: float, this: str | None = None
) -> dict:
    """This build's netassay-gen against ``baseline``, interleaved run by run so that the
    machine's drift hits both alike; medians per build and the ratio this / baseline."""
    bid = secrets.token_hex(2)
    tg, sk = f"na-b{bid}-tg", f"na-b{bid}-sk"
    builds = {"this": this or gen.find_generator(), "baseline": baseline}
    # a build older than the flow flags (the tree before --flow-order) has no flow peaks
    shown = subprocess.run([baseline, "--help"], capture_output=True, text=True).stdout
    names = [n for n, (_, more) in VERSUS_PEAKS.items() if more is None or "--flow-order" in shown]
    peaks: dict[str, dict[str, list[float]]] = {b: {} for b in builds}
    acc: dict[str, dict[str, list[dict[str, Any]]]] = {b: {} for b in builds}
    sink: gen.XdpSink | None = None
    try:
        sink_mac = pair(tg, sk)
        t = Tools(tg, sk, sink_mac, Path("/dev/null"), warm, span)
        sink = gen.start_xdp_sink(sk, "sk0")
        t.count = sink.count
        for _ in range(reps):
            for b, path in builds.items():
                pick_cpus()
                t.binary = path
                for name in names:
                    tech, extra = VERSUS_PEAKS[name]
                    peaks[b].setdefault(name, []).append(t.peak_netassay(tech, extra))
        sink.stop()
        sink = None
        auto = statistics.median(peaks["this"]["auto"])
        for _ in range(reps):
            for frac in (0.1, 0.5, 0.9):
                for b, path in builds.items():
                    pick_cpus()
                    t.binary = path
                    row = accuracy_point(t, "netassay-gen", round(auto * frac, -2), duration)
                    acc[b].setdefault(str(frac), []).append(row)
    finally:
        if sink is not None:
            sink.close()
        del_ns([tg, sk])

    def med(rows: list[dict[str, Any]], key: str) -> float | None:
        vals = [abs(r[key]) for r in rows if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    out: dict[str, Any] = {"builds": builds, "reps": reps, "peak_pps": {}, "accuracy": {}}
    out["not_compared"] = {
        n: "the baseline has no --flow-order" for n in VERSUS_PEAKS if n not in names
    }  # fmt: skip
    for name in names:
        this, base = (statistics.median(peaks[b][name]) for b in ("this", "baseline"))
        out["peak_pps"][name] = {
            "this": this, "baseline": base, "ratio": this / base if base else None,
            "runs": {b: peaks[b][name] for b in builds},
        }  # fmt: skip
    for frac in ("0.1", "0.5", "0.9"):
        row: dict[str, Any] = {"requested_pps": acc["this"][frac][0]["requested_pps"]}
        for key in ("sink_rate_error", "own_rate_error", "own_lateness_p99_ns"):
            this, base = med(acc["this"][frac], key), med(acc["baseline"][frac], key)
            row[key] = {"this": this, "baseline": base}
        out["accuracy"][frac] = row
    out["accuracy_runs"] = acc
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 repetition, short windows")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--baseline", metavar="PATH", help="compare with this netassay-gen only")
    ap.add_argument(
        "--this", metavar="PATH", help="with --baseline: the build compared (default: this tree's)"
    )
    ap.add_argument("--out", metavar="PATH", help="with --baseline: where the JSON goes")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/generator.py: needs root (network namespaces); run with sudo")
        return 6
    if args.baseline:
        if not os.access(args.baseline, os.X_OK):
            print(f"bench/generator.py: --baseline {args.baseline} is not an executable file")
            return 2
        warm, span = (0.5, 1.0) if args.quick else (1.0, 2.0)
        # two rounds even when quick: one pair of runs says little on a shared machine
        res = versus(args.baseline, 2 if args.quick else args.reps, warm, span,
                     1.0 if args.quick else 2.0, args.this)  # fmt: skip
        res["environment"] = environment()
        path = Path(args.out) if args.out else OUT.with_name("generator-versus.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=2) + "\n")
        print(json.dumps({k: res[k] for k in ("builds", "peak_pps", "accuracy")}, indent=2))
        return 0
    stalls = pick_cpus(0.5)
    reps = 1 if args.quick else args.reps
    warm, span = (0.5, 1.0) if args.quick else (1.0, 2.0)
    bid = secrets.token_hex(2)
    tg, sk = f"na-b{bid}-tg", f"na-b{bid}-sk"
    result: dict[str, Any] = {"environment": environment(), "started_utc": time.time()}
    result["environment"]["cpu_stall_share_before"] = stalls
    cfg = Path(f"/tmp/na-b{bid}-trafgen.cfg")
    sink: gen.XdpSink | None = None
    try:
        sink_mac = pair(tg, sk)
        trafgen_cfg(cfg, sink_mac)
        t = Tools(tg, sk, sink_mac, cfg, warm, span)
        sink = gen.start_xdp_sink(sk, "sk0")
        t.count = sink.count
        # iperf3's datagrams carry its own header, not netassay-gen's magic: the XDP sink
        # does not count them, so iperf3's peak is the nft sink's round alone (below)
        runs: dict[str, list[float]] = {"netassay-gen": [], "trafgen": []}
        tech: dict[str, list[float]] = {"auto": [], "sendmmsg": [], "txring": []}
        rounds = []
        for _ in range(reps):  # interleaved, so that drift hits all tools alike
            rounds.append({"stall_share": pick_cpus(), "generator_cpu": int(GEN_CPU)})
            runs["netassay-gen"].append(t.peak_netassay())
            auto = dict(t.last)
            runs["trafgen"].append(t.peak_trafgen())
            tech["sendmmsg"].append(t.peak_netassay("sendmmsg"))
            tech["txring"].append(t.peak_netassay("txring"))
        tech["auto"] = runs["netassay-gen"]
        many = ["--flows", "1000000", "--flow-order", "random"]
        flows: dict[str, list[float]] = {
            "1": [], "1000000 random": [], "sendmmsg 1": [], "sendmmsg 1000000 random": [],
        }  # fmt: skip
        try:
            for _ in range(reps):
                flows["1"].append(t.peak_netassay())
                flows["1000000 random"].append(t.peak_netassay(extra=many))
                flows["sendmmsg 1"].append(t.peak_netassay("sendmmsg"))
                flows["sendmmsg 1000000 random"].append(t.peak_netassay("sendmmsg", many))
            result["flows_peak"] = {
                "runs_pps": flows,
                "median_pps": {k: statistics.median(v) for k, v in flows.items()},
            }
        except RuntimeError as exc:  # a netassay-gen from before --flows went past 65536
            result["flows_peak"] = {"error": str(exc)[-300:]}
        sink.stop()
        sink = None
        peak = {k: statistics.median(v) for k, v in runs.items()}
        result["peak"] = {
            "sink": "xdp count-and-drop (netassay-gen --xdp-sink) on the sink veth",
            "runs_pps": runs,
            "rounds": rounds,
            "median_pps": peak,
            "netassay_gen_auto": auto,
            "ratio_vs_trafgen": peak["netassay-gen"] / peak["trafgen"],
        }
        result["techniques"] = {
            "median_pps": {
                auto.get("technique") or "auto": statistics.median(tech["auto"]),
                "af_packet_sendmmsg": statistics.median(tech["sendmmsg"]),
                "af_packet_tx_ring": statistics.median(tech["txring"]),
            },
            "runs_pps": tech,
        }
        # The older sink, for comparison: nft netdev ingress counter + drop, no XDP
        # on the peer (so netassay-gen's auto sends with sendmmsg). One round.
        sh("nft", "-f", "-", netns=sk, input_text=SINK_NFT.format(dev="sk0"))
        t.count = lambda: nft_count(sk)
        pick_cpus()
        nft = {
            "netassay-gen": t.peak_netassay(),
            "trafgen": t.peak_trafgen(),
            "iperf3": t.peak_iperf3(),
        }
        result["peak_nft_sink"] = {
            "runs_pps": nft,
            "netassay_gen_technique": t.last.get("technique"),
            "ratio_vs_trafgen": nft["netassay-gen"] / nft["trafgen"],
            "ratio_vs_iperf3": nft["netassay-gen"] / nft["iperf3"],
        }
        # skb senders can be faster into the nft sink (veth copies an skb into a page
        # for the peer's XDP program): compare against each tool's better sink too.
        best = {"trafgen": max(peak["trafgen"], nft["trafgen"]), "iperf3": nft["iperf3"]}
        result["peak"]["ratio_vs_trafgen_best_sink"] = peak["netassay-gen"] / best["trafgen"]
        result["peak"]["ratio_vs_iperf3_best_sink"] = peak["netassay-gen"] / best["iperf3"]
        duration = 1.0 if args.quick else 2.0
        pick_cpus()
        result["receiver_at_peak"] = receiver_at_peak(t, duration)
        sh("nft", "delete", "table", "netdev", "nabench", netns=sk)
        acc = []
        for tool in ("netassay-gen", "trafgen"):
            for frac in (0.1, 0.5, 0.9):
                share = pick_cpus()
                row = accuracy_point(t, tool, round(peak[tool] * frac, -2), duration)
                row["fraction_of_peak"] = frac
                row["generator_cpu"], row["stall_share"] = int(GEN_CPU), share
                acc.append(row)
        result["accuracy"] = acc
    finally:
        if sink is not None:
            sink.close()
        del_ns([tg, sk])
        cfg.unlink(missing_ok=True)
    result["router_stall_share"] = pick_cpus()
    # No XDP on the router: auto sends with sendmmsg there, so search up to its peak.
    mmsg_peak = max(
        result["techniques"]["median_pps"]["af_packet_sendmmsg"],
        result["peak_nft_sink"]["runs_pps"]["netassay-gen"],
    )
    result["router"] = router_search(args.quick, bid, mmsg_peak)
    result["finished_utc"] = time.time()
    result["environment"]["cpu_stall_share_after"] = {
        c: cpu_stalls(c) for c in range(min(os.cpu_count() or 1, 2))
    }
    result["targets"] = targets(result)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(result["started_utc"]))
    OUT.with_name(f"generator-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
