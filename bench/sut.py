"""Benchmark the SUTs side by side: the kernel router's and the XDP router's PDR@0.5% on
the same machine, in one run, interleaved.

Two testbeds at pin-2cpu (the generator on CPU 0, the SUT's work on CPU 1), 64-byte
IPv4 frames, one flow, the sink counting with XDP: the kernel router (``--sut router``,
RPS to CPU 1, the generator sending through the pfifo wire) and the XDP router (``--sut
xdp-router``, its NAPI thread on CPU 1, the generator sending through a head-drop
queue in front of its receive ring). Each has
its own grid of loads (the XDP router's reaches several Mpps); at every load index and
repetition one trial of each runs, the order alternating, so the machine's noise (other
work on a shared VM) falls on both alike.

Per SUT and load: the trials, those left out as measurement faults (and why; such a
trial is run again, at most twice, as a sweep does), the mean
PLR of the SUT's loss over the others (frames the sink itself dropped count as
forwarded), and where the frames were lost. The headline per SUT: PDR@0.5%, the highest
load such that it and every lower load (with a usable trial) have a mean PLR <= 0.5%,
with the next load of the grid as its upper bound; the highest zero-loss load beside
it; the generator's peak through each testbed (probed first: a PDR with no failing
load above it is a lower bound, the SUT forwarded all the generator could send); and the
ratio XDP / kernel. Beside it, what one forwarded frame costs the SUT's CPU (kernel time
on CPU 1 per frame; for the XDP router also its NAPI thread's own run time, exact), and
the ratio of those costs: an estimate of the capacity ratio that holds where the
generator, not the SUTs, bounds the PDRs.

The PDRs above are lower bounds here: paced through the wire, one vCPU of generator
tops out below either router's capacity. So a second phase floods each SUT: XDP live
frames at the generator's unpaced peak (several Mpps, 64-frame bursts), far above what
either router forwards, and the sink counts what comes out: the maximum forwarding rate
(RFC 2285, 3.6.1: the rate at which the SUT forwards when offered more than it can).
What the SUT could not take is counted where it was lost: veth's 256-frame receive ring
refusing frames (the generator's ``egress_drops``, tg0's tx_dropped: on a NIC, an RX ring
overrun), the kernel router's backlog on CPU 1, the XDP router's own counters. The kernel
router's ingress veth gets GRO (NAPI) for this phase only, since veth takes XDP frames
only from a peer that runs NAPI: its frames are still received on the generator's CPU and
handed to CPU 1 by RPS, as in the paced phase. Both SUTs are flooded in turn, the order
alternating; the ratio of the medians of their maximum forwarding rates is the capacity
ratio this machine can show.

Run: ``sudo .venv/bin/python bench/sut.py [--quick]``; writes bench/results/sut.json
(and a timestamped copy) and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.config import TestbedConfig  # noqa: E402
from netassay.counters import cpu as counters_cpu  # noqa: E402
from netassay.counters.loss import LOCATIONS  # noqa: E402
from netassay.testbed import Testbed, state  # noqa: E402
from netassay.trial.engine import measure, trials_on  # noqa: E402
from netassay.trial.flood import flood, flood_path  # noqa: E402
from netassay.units import parse_rates  # noqa: E402

OUT = ROOT / "bench" / "results" / "sut.json"
SUTS = ("router", "xdp-router")
PDR = 0.005
RETRIES = 2  # a trial the machine spoiled (generator limit or stall) is run again
PEAK_MARGIN = 0.98  # as a sweep: loads above 98% of the generator's peak are not run
GRIDS = {"router": "100k:700k:50k", "xdp-router": "200k:1.4M:100k"}
QUICK_GRIDS = {"router": "150k:600k:150k", "xdp-router": "300k:1.2M:300k"}


SUT_CPU = 1  # pin-2cpu: the SUT's (and the sink's) receive work


def _row() -> dict[str, Any]:
    return {"trials": 0, "usable": 0, "sent": 0, "sut_lost": 0, "plr": [], "excluded": [],
            "loss_location": {loc: 0 for loc in LOCATIONS}, "cpu_ns_per_frame": [],
            "napi_ns_per_frame": []}  # fmt: skip


def kernel_ns(cpu: int) -> int:
    """Time one CPU spent in the kernel so far (system, irq, softirq; /proc/stat, USER_HZ
    ticks -> ns): the routers' and the sink's work, not the tools' user processes (other
    kernel work on that CPU is in it too: the interleaving spreads it over both SUTs)."""
    return counters_cpu.time_ns(cpu, ("system", "irq", "softirq"))


def thread_ns(pid: int | None) -> int:
    """A thread's run time so far (schedstat, ns): the XDP router's NAPI thread, exact."""
    if pid is None:
        return 0
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def bounds(rates: list[float], rows: dict[float, dict[str, Any]], goal: float) -> dict[str, Any]:
    """The highest load such that it and every lower load with a usable trial have a
    mean PLR <= goal, and the first load that does not (its upper bound)."""
    best, above = None, None
    for r in rates:
        row = rows[r]
        if row["usable"] == 0:
            continue
        if sum(row["plr"]) / row["usable"] > goal:
            above = r
            break
        best = r
    return {"pps": best, "next_load_pps": above}


def _trial(ctx: Any, sut: str, i: int, k: int, rate: float, duration_s: float,
           row: dict[str, Any]) -> None:  # fmt: skip
    """One trial, repeated (at most RETRIES times) while it is a measurement fault."""
    napi = (ctx.tb.state.get("xdp_router") or {}).get("napi_pid")
    for _ in range(1 + RETRIES):
        cpu0, napi0 = kernel_ns(SUT_CPU), thread_ns(napi)
        rec = measure(ctx, i, k, rate, duration_s)
        cpu, napi_run = kernel_ns(SUT_CPU) - cpu0, thread_ns(napi) - napi0
        row["trials"] += 1
        if not rec.excluded:
            break
        row["excluded"].append(rec.excluded)
        print(f"{sut:10} {rate / 1e3:7.0f}k run {k}: left out ({rec.excluded[:80]})", flush=True)
    else:
        return
    lost = rec.sent - rec.forwarded
    row["usable"] += 1
    row["sent"] += rec.sent
    row["sut_lost"] += lost
    row["plr"].append(lost / rec.sent if rec.sent else 0.0)
    if rec.forwarded:
        row["cpu_ns_per_frame"].append(round(cpu / rec.forwarded, 1))
        if napi is not None:
            row["napi_ns_per_frame"].append(round(napi_run / rec.forwarded, 1))
    for loc, n in rec.loss_location.items():
        row["loss_location"][loc] += n
    print(f"{sut:10} {rate / 1e3:7.0f}k run {k}: PLR {row['plr'][-1]:.5f}", flush=True)


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _flood(ctx: Any, duration_s: float) -> dict[str, Any]:
    """One flood (``methods.flood``) and what a forwarded frame cost CPU 1 in it."""
    cpu0 = kernel_ns(SUT_CPU)
    f = flood(ctx, duration_s)
    cpu = kernel_ns(SUT_CPU) - cpu0
    f["sut_cpu_ns_per_forwarded_frame"] = round(cpu / f["forwarded"], 1) if f["forwarded"] else None
    return f


def run(grids: dict[str, list[float]], reps: int, duration_s: float,
        flood_reps: int, flood_s: float) -> dict[str, Any]:  # fmt: skip
    tag = secrets.token_hex(2)
    per: dict[str, dict[float, dict[str, Any]]] = {s: {r: _row() for r in grids[s]} for s in SUTS}
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t0 = time.monotonic()
    with ExitStack() as stack:
        ctx = {}
        peak = {}
        for s in SUTS:
            cfg = TestbedConfig(sut=s, pinning="pin-2cpu")
            tb = stack.enter_context(Testbed(f"b{tag}{s[0]}", cfg))
            ctx[s] = stack.enter_context(trials_on(tb))
            peak[s] = round(tb.send("max", 0.5).achieved_rate_pps)
            # loads the generator cannot send through this testbed are not run (a sweep
            # refuses them too): they would only be measurement faults
            grids[s] = [r for r in grids[s] if r <= PEAK_MARGIN * peak[s]] or grids[s][:1]
            per[s] = {r: per[s][r] for r in grids[s]}
        n = max(len(g) for g in grids.values())
        for k in range(reps):
            for i in range(n):
                order = SUTS if (i + k) % 2 == 0 else SUTS[::-1]
                for s in order:
                    if i < len(grids[s]):
                        rate = grids[s][i]
                        _trial(ctx[s], s, i, k, rate, duration_s, per[s][rate])
        setup = {s: stack.enter_context(flood_path(ctx[s].tb)) for s in SUTS}
        floods: dict[str, list[dict[str, Any]]] = {s: [] for s in SUTS}
        for k in range(flood_reps):
            for s in SUTS if k % 2 == 0 else SUTS[::-1]:
                floods[s].append(_flood(ctx[s], flood_s))
                f = floods[s][-1]
                print(f"{s:10} flood {k}: offered {f['offered_pps'] / 1e6:.2f} Mpps, "
                      f"forwarded {f['forwarded_pps'] / 1e6:.3f} Mpps", flush=True)  # fmt: skip
    mfr = {s: _median([f["forwarded_pps"] for f in floods[s]]) for s in SUTS}
    pdr = {s: bounds(grids[s], per[s], PDR) for s in SUTS}
    ndr = {s: bounds(grids[s], per[s], 0.0) for s in SUTS}
    a, b = pdr["xdp-router"]["pps"], pdr["router"]["pps"]
    # a frame's cost falls as the load rises (more frames per wake-up): compared at the
    # loads both SUTs ran, load by load
    common = sorted(set(grids["router"]) & set(grids["xdp-router"]))
    cost = {s: {f"{r:.0f}": _median(per[s][r]["cpu_ns_per_frame"]) for r in common} for s in SUTS}
    napi = {f"{r:.0f}": _median(per["xdp-router"][r]["napi_ns_per_frame"]) for r in common}
    ratios = [k / x for k, x in zip(cost["router"].values(), cost["xdp-router"].values(),
                                    strict=True) if k and x]  # fmt: skip
    return {
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "netdev_max_backlog": state.read_sysctl("net.core.netdev_max_backlog"),
            "loadavg_start": load0,
            "loadavg_end": Path("/proc/loadavg").read_text().split()[:3],
        },
        "testbeds": "pin-2cpu, 64-byte IPv4 frames, 1 flow, XDP sink; kernel router: "
        "pfifo wire, RPS to CPU 1; XDP router: head-drop wire, NAPI thread on CPU 1",
        "duration_s": duration_s,
        "repetitions": reps,
        "rates_pps": grids,
        "generator_peak_pps": peak,
        "pdr_0.5pct": pdr,
        "zero_loss": ndr,
        "ratio_pdr_xdp_over_kernel": round(a / b, 2) if a and b else None,
        # a PDR with no failing load above it is a lower bound: the SUT forwarded all
        # the grid offered (up to what the generator could send)
        "pdr_is_lower_bound": {s: pdr[s]["next_load_pps"] is None for s in SUTS},
        # what one forwarded frame costs the SUT's CPU (kernel time on CPU 1, the sink's
        # share included), median over the usable trials at each load both SUTs ran, and
        # the median of the per-load ratios: a capacity estimate where the PDRs are
        # lower bounds
        "sut_cpu_ns_per_frame_median": cost,
        "xdp_napi_thread_ns_per_frame_median": napi,
        "cpu_cost_ratio_kernel_over_xdp": round(_median(ratios), 2) if ratios else None,
        # the flood: the rate each SUT forwards when offered far more than it can
        # (median over the floods), and the ratio; not bounded by the paced generator
        "flood": {
            "technique": "XDP live frames at the generator's unpaced peak",
            "duration_s": flood_s,
            "setup": setup,
            "max_forwarding_rate_pps_median": mfr,
            "runs": floods,
        },
        "ratio_max_forwarding_rate_xdp_over_kernel": (
            round(mfr["xdp-router"] / mfr["router"], 2)
            if mfr["xdp-router"] and mfr["router"]
            else None
        ),
        "usable_trials": {s: sum(r["usable"] for r in per[s].values()) for s in SUTS},
        "excluded_trials": {s: sum(len(r["excluded"]) for r in per[s].values()) for s in SUTS},
        "per_load": {
            s: {
                f"{r:.0f}": {
                    **{k: v for k, v in row.items() if k != "plr"},
                    "plr_mean": sum(row["plr"]) / row["usable"] if row["usable"] else None,
                }
                for r, row in per[s].items()
            }
            for s in SUTS
        },
        "wall_s": round(time.monotonic() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="coarse grids, 2 x 0.5 s")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--duration", type=float, default=None, help="seconds per trial")
    ap.add_argument("--router-rates", default=None, help="e.g. 100k:700k:50k")
    ap.add_argument("--xdp-rates", default=None, help="e.g. 250k:3.5M:250k")
    ap.add_argument("--flood-reps", type=int, default=None, help="floods per SUT (3; quick 2)")
    args = ap.parse_args()
    base = QUICK_GRIDS if args.quick else GRIDS
    grids = {
        "router": parse_rates(args.router_rates or base["router"]),
        "xdp-router": parse_rates(args.xdp_rates or base["xdp-router"]),
    }
    reps = args.reps or (2 if args.quick else 3)
    duration = args.duration or (0.5 if args.quick else 1.0)
    flood_reps = args.flood_reps or (2 if args.quick else 3)
    flood_s = 1.0 if args.quick else 2.0
    result = run(grids, reps, duration, flood_reps, flood_s)
    text = json.dumps(result, indent=2)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text + "\n")
    stamp = result["utc"].replace(":", "").replace("-", "")
    (OUT.parent / f"sut-{stamp}.json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
