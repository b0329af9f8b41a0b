"""Benchmark the TCP path's delay line (``netassay-gen delay``) beside the kernel bridge
that stands in for it when no delay is asked: how many full-size frames per second it
carries, and how close to its delay each one leaves.

One TCP path per variant (``testbed.tcppath``: client, path, server), netassay-gen
sending 1514-byte frames (1538 at L1) from the client at each rate for 2 s, the XDP
sink counting them at the server with its one-way latency histogram (the generator's
stamp against the sink's clock: the same host). Variants: the kernel bridge (delay 0,
the peer), the line at 1 ms and at 20 ms. Per variant and rate: sent, counted, lost,
the line's own drops and late departures, and the one-way latency's p50, p99 and max
minus the delay asked. The headline per variant: the line's limit, the highest rate at
which nothing was lost and the p99 of the added latency stayed under 1 ms (the
variants interleaved rate by rate, so the machine's noise falls on all alike).

Run: ``sudo .venv/bin/python bench/delayline.py [--quick]``; writes
bench/results/delayline.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.hist import SinkHist  # noqa: E402
from netassay.testbed import Testbed  # noqa: E402
from netassay.testbed import tcppath as P  # noqa: E402
from netassay.traffic.generator import run_generator, start_xdp_sink  # noqa: E402

OUT = ROOT / "bench" / "results" / "delayline.json"
SIZE = 1514
L1_BYTES = SIZE + 24
VARIANTS = {"kernel bridge": 0.0, "line 1 ms": 0.001, "line 20 ms": 0.020}
LATE_P99_S = 0.001  # a rate the line carries: nothing lost, p99 under delay + 1 ms


def one(tb: Testbed, rate: float, duration_s: float, delay_s: float) -> dict[str, Any]:
    """One rate through one path: what was sent, counted, lost, and how late."""
    st, t = tb.state, tb.state["target"]
    before = P.line_stats(st)
    with start_xdp_sink(t["server_netns"], t["server_dev"], SIZE, extra=["--latency"]) as sink:
        gen = run_generator(t["netns"], t["dev"], st["macs"]["s0"], t["src"], t["dst"], rate,
                            duration_s, size_bytes=SIZE, best_effort=True)  # fmt: skip
        time.sleep(delay_s + 0.3)  # the frames still held arrive
        c = sink.read()
    P.wait_line_counters(st, time.time())
    after = P.line_stats(st)
    lat = SinkHist(c["latency"]).summary() if c.get("latency") else {}
    added = {k: (lat[k] / 1e9 - delay_s if lat.get(k) is not None else None)
             for k in ("p50_ns", "p99_ns", "max_ns")}  # fmt: skip
    return {
        "rate_pps": rate,
        "gbps_l1": round(rate * L1_BYTES * 8 / 1e9, 3),
        "sent": gen.sent,
        "counted": int(c["packets"]),
        "lost": gen.sent - int(c["packets"]),
        "line_dropped": P.line_drops(after) - P.line_drops(before),
        "added_latency_s": added,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three rates, 1 s each")
    args = ap.parse_args()
    rates = [5e4, 1e5, 1.5e5] if args.quick else [5e4, 1e5, 1.5e5, 2e5, 2.5e5, 3e5]
    duration = 1.0 if args.quick else 2.0
    t0 = time.monotonic()
    per: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for rate in rates:
        for v, delay in VARIANTS.items():
            name = "b" + secrets.token_hex(3)
            with Testbed(name, P.TcpPathConfig(delay_s=delay)) as tb:
                r = one(tb, rate, duration, delay)
            per[v].append(r)
            a = r["added_latency_s"]
            p99 = "-" if a["p99_ns"] is None else f"{a['p99_ns'] * 1e6:.0f} us"
            print(f"{v:14} {rate / 1e3:5.0f} kpps: sent {r['sent']}, lost {r['lost']}, line "
                  f"dropped {r['line_dropped']}, added p99 {p99}", flush=True)  # fmt: skip
    limit = {}
    for v, rows in per.items():
        ok = [r["rate_pps"] for r in rows if r["lost"] == 0 and r["added_latency_s"]["p99_ns"]
              is not None and r["added_latency_s"]["p99_ns"] < LATE_P99_S]  # fmt: skip
        limit[v] = max(ok) if ok else None
    gbps = {v: (round(x * L1_BYTES * 8 / 1e9, 3) if x else None) for v, x in limit.items()}
    res = {
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"kernel": platform.release(), "cpus": os.cpu_count()},
        "setup": f"TCP path (client, path, server), netassay-gen {SIZE}-byte frames for "
        f"{duration:g} s per rate into the XDP sink with its latency histogram",
        "limit_pps": limit,
        "limit_gbps_l1": gbps,
        "per_rate": per,
        "wall_s": round(time.monotonic() - t0, 1),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v for k, v in res.items() if k != "per_rate"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
