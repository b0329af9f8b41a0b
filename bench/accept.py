"""Benchmark: the highest contract an acceptance test can PASS with iperf3 and with
netassay-gen, side by side on the same clean embedded link.

The link has no cap and no loss (``--embedded`` with no ground truth): everything a
test loses there is the test host's. Each tool runs one flow of 1472-byte datagrams
(1500-byte packets, 1518-byte frames); the contract is counted at the Ethernet layer.
Per tool, a bisection in log space of the contract between ``--low`` and ``--high``:
one ``netassay accept`` run (``--runs 1``, no ramp, ``--duration``) per probe, the
tools' probes interleaved step by step so that this shared machine's noise falls on
both. A probe that PASSes raises the lower bound, anything else lowers the upper one.

Reported per tool: the highest contract that PASSed, the lowest that did not, every
probe (verdict, reason, throughput, loss, the host's counted drops), and the
datagrams lost that the verdict put on the link (a FAIL on this lossless link: loss
that is really the tool's or the host's; target zero). Headline: netassay-gen's
highest PASS over iperf3's (target >= 2).

Run: ``sudo .venv/bin/python bench/accept.py [--steps 7] [--duration 3]``; writes
bench/results/accept.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import secrets
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.methods.accept.request import AcceptRequest  # noqa: E402
from netassay.methods.accept.run import measure  # noqa: E402
from netassay.testbed import topology  # noqa: E402

OUT = ROOT / "bench" / "results" / "accept.json"
TOOLS = ("iperf3", "netassay-gen")
HOST_KEYS = ("receiver.udp_rcvbuf_errors", "veth.l1.tx_dropped", "veth.c0.tx_dropped",
             "receiver.packet_ring_dropped", "sender.udp_sndbuf_errors")  # fmt: skip


def probe(tool: str, contract: float, duration: float) -> dict[str, Any]:
    name = "ba" + secrets.token_hex(3)
    req = AcceptRequest(contract_bps=contract, layer="ethernet", sender=tool, runs=1,
                        duration_s=duration, ramp=False, name=name)  # fmt: skip
    t0 = time.monotonic()
    try:
        res = measure(req)
    finally:
        topology.cleanup({name})
    run, v = res.test.runs[0], res.verdict
    host = sum(int(run.host.get(k, 0)) for k in HOST_KEYS)
    lost = run.lost_packets or 0
    return {
        "tool": tool,
        "contract_bps": contract,
        "verdict": v.verdict,
        "reason": v.reason,
        "throughput_bps": v.throughput_bps,
        "loss_ratio": v.loss_ratio,
        "lost_packets": lost,
        "host_counted_drops": host,
        "link_attributed_lost": lost if v.verdict == "FAIL" else 0,
        "sent_packets": run.sent_packets,
        "cpu_busy": run.cpu_busy(),
        "host": run.host,
        "wall_s": round(time.monotonic() - t0, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--low", type=float, default=100e6, help="contract that should pass")
    ap.add_argument("--high", type=float, default=6e9, help="contract that should not")
    ap.add_argument("--steps", type=int, default=7, help="bisection steps per tool")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per probe")
    args = ap.parse_args()
    bounds = {t: [args.low, args.high] for t in TOOLS}
    probes: list[dict[str, Any]] = []
    t0 = time.monotonic()
    for t in TOOLS:  # the lower bound must really pass
        p = probe(t, args.low, args.duration)
        probes.append(p)
        if p["verdict"] != "PASS":
            bounds[t] = [0.0, args.low]
    for step in range(args.steps):
        order = TOOLS if step % 2 == 0 else TOOLS[::-1]
        for t in order:
            lo, hi = bounds[t]
            if lo <= 0:
                continue
            mid = math.sqrt(lo * hi)
            p = probe(t, mid, args.duration)
            probes.append(p)
            bounds[t] = [mid, hi] if p["verdict"] == "PASS" else [lo, mid]
            print(f"{t:13s} {mid / 1e6:8.1f} Mbit/s: {p['verdict']}", file=sys.stderr)
    out: dict[str, Any] = {"tools": {}}
    for t in TOOLS:
        mine = [p for p in probes if p["tool"] == t]
        out["tools"][t] = {
            "highest_pass_bps": bounds[t][0] or None,
            "lowest_not_pass_bps": bounds[t][1],
            "probes": mine,
            "fail_verdicts": sum(p["verdict"] == "FAIL" for p in mine),
            "link_attributed_lost": sum(p["link_attributed_lost"] for p in mine),
        }
    a = out["tools"]["netassay-gen"]["highest_pass_bps"]
    b = out["tools"]["iperf3"]["highest_pass_bps"]
    out["ratio_netassay_gen_over_iperf3"] = a / b if a and b else None
    out["target_ratio"] = 2.0
    out["link_attributed_lost_total"] = sum(v["link_attributed_lost"]
                                            for v in out["tools"].values())  # fmt: skip
    out["setup"] = {
        "link": "embedded, no cap, no loss (veth client -> link namespace -> veth server)",
        "datagram_bytes": 1472, "frame_bytes": 1518, "layer": "ethernet", "flows": 1,
        "duration_s": args.duration, "steps": args.steps, "cpus": "sender CPU 0, receiver CPU 1",
        "kernel": platform.release(), "wall_s": round(time.monotonic() - t0, 1),
    }  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2, sort_keys=True, default=str) + "\n")
    summary = {k: v for k, v in out.items() if k != "tools"}
    summary["highest_pass_bps"] = {t: v["highest_pass_bps"] for t, v in out["tools"].items()}
    print(json.dumps(summary, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
