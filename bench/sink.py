"""Benchmark the testbed's sinks side by side: how much of the sink's cost the XDP
counter removes from the SUT's CPU.

At pin-2cpu the sink's receive work runs on the SUT's CPU (the SUT's transmit hands each
frame to the sink on that CPU). With the full stack plus an nft counter (``--sink
nft``) the sink shares the SUT's per-CPU backlog and drops frames the SUT forwarded;
with netassay-gen's XDP program (``--sink xdp``, the default) the sink counts and
drops test frames in the driver's receive path. One testbed (kernel router, pin-2cpu,
backlog 10000), one grid of loads, both sinks interleaved at every load and
repetition (the order alternating), so the machine's noise falls on both alike.

Per sink and load: the trials, the frames the sink dropped after the SUT forwarded
them, the SUT's loss, the trials left out as measurement faults, and the SUT CPU's busy
time per forwarded frame (from /proc/stat: softirq time on CPU 1 over the trial; the
router's and the sink's receive work both run there in softirq, so the difference
between the sinks is the sink's cost). The headlines: per sink, the highest
load at which the sink drops nothing (at it and at every lower load, over every trial
that is not a measurement fault; loads without such a trial are skipped), the frames the
sink dropped in all, and the median CPU-1 ns per frame; their ratios.

Run: ``sudo .venv/bin/python bench/sink.py [--quick]``; writes bench/results/sink.json
(and a timestamped copy) and prints it.

``--latency``: the XDP sink counting only against the XDP sink keeping its latency
histogram (``--xdp-sink --latency``), side by side: a veth pair of two namespaces, the
generator at --rate max with XDP live frames (its cheapest technique) straight into the
sink, the two sinks alternating run by run; per sink the rate it counted (frames over
its first-to-last arrival) and its median over the runs, and the ratio. Writes
bench/results/sink-latency.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import secrets
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.config import TestbedConfig  # noqa: E402
from netassay.counters.sink import SinkCounter  # noqa: E402
from netassay.proc import run as run_cmd  # noqa: E402
from netassay.testbed import Testbed, topology  # noqa: E402
from netassay.traffic.generator import run_generator, start_xdp_sink  # noqa: E402
from netassay.trial.engine import TrialContext, measure  # noqa: E402

OUT = ROOT / "bench" / "results" / "sink.json"
SINKS = ("nft", "xdp")
SUT_CPU = 1  # pin-2cpu: the SUT's (and the sink's) receive work


def cpu_busy_ns(cpu: int) -> int:
    """Softirq time of one CPU so far (/proc/stat, USER_HZ ticks -> ns): the router's
    and the sink's receive work (NET_RX), not the counter-reading tools' processes."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{cpu} "):
            return int(line.split()[7]) * 10_000_000  # softirq; USER_HZ 100
    raise RuntimeError(f"no cpu{cpu} in /proc/stat")


def _highest_clean(rates: list[float], rows: dict[float, dict[str, Any]]) -> float | None:
    """The highest load such that it and every lower load had no sink drop, over the
    trials that are not measurement faults (a load without any such trial is skipped:
    on a busy machine the generator's stalls would otherwise decide the number)."""
    best = None
    for r in rates:
        row = rows[r]
        if row["usable"] == 0:
            continue
        if row["sink_dropped"] > 0:
            break
        best = r
    return best


def run(rates: list[float], reps: int, duration_s: float) -> dict[str, Any]:
    name = "b" + secrets.token_hex(3)
    cfg = TestbedConfig(sut="router", pinning="pin-2cpu", backlog=10_000)
    per: dict[str, dict[float, dict[str, Any]]] = {s: {} for s in SINKS}
    t0 = time.monotonic()
    with Testbed(name, cfg) as tb:
        queue = topology.path_queue_pkts(tb)
        counters = {s: SinkCounter(tb.ns("sink"), s, cfg.size_bytes) for s in SINKS}
        try:
            for i, rate in enumerate(rates):
                for s in SINKS:
                    per[s][rate] = {"trials": 0, "usable": 0, "sink_dropped": 0, "sut_lost": 0,
                                    "sent": 0, "excluded": [], "cpu_ns_per_frame": []}  # fmt: skip
                for k in range(reps):
                    order = SINKS if (i + k) % 2 == 0 else SINKS[::-1]
                    for s in order:
                        ctx = TrialContext(tb, counters[s], queue)
                        counters[s].ensure()  # attach before the CPU clock starts
                        busy0 = cpu_busy_ns(SUT_CPU)
                        rec = measure(ctx, i, k, rate, duration_s)
                        busy = cpu_busy_ns(SUT_CPU) - busy0
                        counters[s].close()  # the other sink runs next: no XDP program left
                        row = per[s][rate]
                        row["trials"] += 1
                        if rec.excluded:
                            row["excluded"].append(rec.excluded)
                            continue
                        row["usable"] += 1
                        row["sent"] += rec.sent
                        row["sink_dropped"] += rec.sink_dropped
                        row["sut_lost"] += rec.sent - rec.forwarded
                        if rec.forwarded:
                            row["cpu_ns_per_frame"].append(round(busy / rec.forwarded, 1))
                        print(f"{s:4} {rate / 1e3:6.0f}k run {k}: sink dropped "
                              f"{rec.sink_dropped}, SUT lost {rec.sent - rec.forwarded}",
                              flush=True)  # fmt: skip
        finally:
            for c in counters.values():
                c.close()
    clean = {s: _highest_clean(rates, per[s]) for s in SINKS}
    ratio = clean["xdp"] / clean["nft"] if clean["xdp"] and clean["nft"] else None
    cost = {
        s: statistics.median(c)
        if (c := [x for r in rates for x in per[s][r]["cpu_ns_per_frame"]])
        else None
        for s in SINKS
    }
    return {
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"kernel": platform.release(), "cpus": __import__("os").cpu_count()},
        "testbed": "kernel router, pin-2cpu, backlog 10000, 64-byte frames, 1 flow",
        "duration_s": duration_s,
        "repetitions": reps,
        "rates_pps": rates,
        "highest_load_without_sink_drops_pps": clean,
        "ratio_xdp_over_nft": ratio,
        "sink_dropped_total": {s: sum(per[s][r]["sink_dropped"] for r in rates) for s in SINKS},
        "usable_trials": {s: sum(per[s][r]["usable"] for r in rates) for s in SINKS},
        "sut_cpu_ns_per_frame_median": cost,
        "cpu_cost_ratio_xdp_over_nft": cost["xdp"] / cost["nft"]
        if cost["xdp"] and cost["nft"]
        else None,
        "per_load": {s: {f"{r:.0f}": v for r, v in per[s].items()} for s in SINKS},
        "wall_s": round(time.monotonic() - t0, 1),
    }


def _pair(tag: str) -> tuple[str, str, str]:
    """Two namespaces joined by a veth (na-<tag>-tg, na-<tag>-sink); the sink's MAC."""
    tg, sink = f"na-{tag}-tg", f"na-{tag}-sink"
    for ns in (tg, sink):
        run_cmd(["ip", "netns", "add", ns])
    run_cmd(["ip", "link", "add", "tg0", "netns", tg, "type", "veth", "peer", "name", "sink0",
             "netns", sink])  # fmt: skip
    for ns, dev, addr in ((tg, "tg0", "198.18.0.1/24"), (sink, "sink0", "198.18.0.2/24")):
        run_cmd(["ip", "addr", "add", addr, "dev", dev], netns=ns)
        run_cmd(["ip", "link", "set", dev, "up"], netns=ns)
    link = json.loads(run_cmd(["ip", "-j", "link", "show", "sink0"], netns=sink).stdout)
    return tg, sink, link[0]["address"]


def run_latency(reps: int, duration_s: float) -> dict[str, Any]:
    """The count-only sink and the sink with its histogram, alternating (see the module)."""
    tag = "b" + secrets.token_hex(3)
    variants = {"count": [], "count+latency": ["--latency"]}
    rates: dict[str, list[float]] = {v: [] for v in variants}
    t0 = time.monotonic()
    tg, sink_ns, mac = _pair(tag)
    try:
        for k in range(reps):
            for v in list(variants) if k % 2 == 0 else list(variants)[::-1]:
                with start_xdp_sink(sink_ns, "sink0", 64, extra=variants[v]) as sink:
                    gen = run_generator(tg, "tg0", mac, "198.18.0.1", "198.18.0.2", "max",
                                        duration_s, best_effort=True,
                                        extra=["--technique", "xdp"])  # fmt: skip
                    time.sleep(0.2)
                    c = sink.read()
                span = (c["last_ns"] - c["first_ns"]) / 1e9
                rates[v].append(round(c["packets"] / span) if span > 0 else 0.0)
                n = c.get("latency", {}).get("n")
                print(f"{v:14} run {k}: sent {gen.sent}, counted {c['packets']} at "
                      f"{rates[v][-1] / 1e6:.3f} Mpps (histogram: {n})", flush=True)  # fmt: skip
    finally:
        for ns in (tg, sink_ns):
            run_cmd(["ip", "netns", "del", ns], check=False)
    med = {v: statistics.median(r) for v, r in rates.items()}
    return {
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"kernel": platform.release(), "cpus": __import__("os").cpu_count()},
        "setup": "veth pair, netassay-gen --rate max --technique xdp into the XDP sink, "
        "64-byte frames, 1 flow",
        "duration_s": duration_s,
        "repetitions": reps,
        "counted_pps": rates,
        "counted_pps_median": med,
        "ratio_latency_over_count": med["count+latency"] / med["count"] if med["count"] else None,
        "wall_s": round(time.monotonic() - t0, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer loads, 1 repetition")
    ap.add_argument("--latency", action="store_true", help="count-only vs histogram sink")
    args = ap.parse_args()
    if args.latency:
        res = run_latency(3 if args.quick else 7, 2.0)
        out = OUT.with_name("sink-latency.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=2))
        print(json.dumps(res, indent=2))
        return 0
    if args.quick:
        rates, reps = [2e5, 3e5, 4e5], 1
    else:
        rates, reps = [float(r) for r in range(200_000, 760_000, 100_000)], 3
    res = run(rates, reps, 1.0)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2))
    shutil.copy(OUT, OUT.with_name(f"sink-{res['utc'].replace(':', '')}.json"))
    print(json.dumps({k: v for k, v in res.items() if k != "per_load"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
