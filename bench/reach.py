"""The generator's paced reach against the SUT's MRR, in each receive mode, side by side.

PASTRAMI's question (where does a router saturate?) has an answer on a testbed only when
the generator paces past the router's maximum receive rate (MRR). This bench measures
both on the same testbed, in both receive modes (``--rx-mode``, ``testbed.receive``),
the modes interleaved round by round so that the machine's noise falls on both:

- ``backlog`` (the default): netassay's only path until --rx-mode (AF_PACKET sendmmsg through the
  wire's pfifo; the SUT's veth hands each frame to the stack with netif_rx on the
  generator's CPU, RPS steers it to the SUT's CPU). The reference: what main did.
- ``napi``: XDP live frames paced inside the kernel into the SUT's
  NAPI ring, polled on the SUT's CPU.

Per round and mode, on a kernel router at pin-2cpu, 64-byte frames:

- the MRR: a flood (XDP live frames at the generator's unpaced peak; in backlog mode the
  ingress gets GRO for it, as ``netassay flood`` does) of ``--flood`` seconds, what the
  sink counted per second;
- the generator's peak (``--rate max`` through the testbed as trials send, 0.5 s) and
  its paced reach: the highest load it keeps within 0.1% starting from the peak
  (``lab.reach_probe``: at most three tries, each at 98% of what the last achieved), with
  the p99 and largest lateness there;
- the ladder: the MRR times 1.3, 2, 2.5, 3 and 4 (up to the peak), paced 1 s each, with
  the rate error and the p99 lateness at each (the issue's goal: 2 x the MRR within 0.1%,
  p99 lateness at most 50 us);
- its accuracy at 50 kpps and 150 kpps: sent against the sink's count (a trial each);
- false loss: ``--false-frames`` frames at half the mode's MRR measured this round, in
  trials of 1 s, no loss expected (every frame lost is the test's, not the router's).

Writes bench/results/reach.json (and a timestamped copy) and prints a summary: per mode
the medians over rounds of the MRR, the reach and their ratio, the ratio per round.

Run: ``sudo .venv/bin/python bench/reach.py [--rounds 5] [--quick]``
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

from netassay import quality  # noqa: E402
from netassay.config import TestbedConfig  # noqa: E402
from netassay.shared import lab  # noqa: E402
from netassay.testbed import Testbed  # noqa: E402
from netassay.trial.engine import measure, trials_on  # noqa: E402
from netassay.trial.flood import flood, flood_path  # noqa: E402

OUT = ROOT / "bench" / "results" / "reach.json"
MODES = ("backlog", "napi")
LADDER = (1.3, 2.0, 2.5, 3.0, 4.0)  # multiples of the MRR paced for 1 s each, up to the peak


def one_round(ctx: Any, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """MRR, peak, reach, accuracy and false loss on one testbed (``ctx``)."""
    tb = ctx.tb
    with flood_path(tb):
        f = flood(ctx, args.flood)
    mrr = float(f["forwarded_pps"])
    peak = float(tb.send("max", 0.5).achieved_rate_pps or 0.0)
    ladder = []
    for k in LADDER:
        if k * mrr > peak:
            break
        g = tb.send(round(k * mrr, -3), 1.0)
        ladder.append({"x_mrr": k, "rate_pps": round(k * mrr, -3),
                       "achieved_pps": g.achieved_rate_pps, "rate_error": g.rate_error,
                       "lateness_p99_ns": g.lateness_p99_ns,
                       "lateness_max_ns": g.lateness_max_ns,
                       "kept": quality.rate_kind(round(k * mrr, -3),
                                                 float(g.achieved_rate_pps or 0))
                       != quality.GENERATOR_LIMIT})  # fmt: skip
    reach, res = lab.reach_probe(tb, peak)
    out: dict[str, Any] = {
        "mode": mode,
        "mrr_pps": mrr,
        "mrr_saturated": bool(f["saturated"]),
        "flood_offered_pps": f["offered_pps"],
        "peak_pps": peak,
        "reach_pps": reach,
        "reach_over_mrr": reach / mrr if mrr else None,
        "reach_kept": res is not None,
        "reach_rate_error": res.rate_error if res else None,
        "reach_lateness_p99_ns": res.lateness_p99_ns if res else None,
        "reach_lateness_max_ns": res.lateness_max_ns if res else None,
        "technique": res.technique if res else None,
        "ladder": ladder,
        "ladder_reach_x_mrr": max((r["x_mrr"] for r in ladder if r["kept"]), default=None),
    }
    acc = {}
    for rate in (50_000, 150_000):
        rec = measure(ctx, 0, 0, rate, 1.0)
        acc[str(rate)] = {"sent": rec.sent, "counted": rec.forwarded, "excluded": rec.excluded,
                          "rate_error": rec.counters["generator"].get("rate_error")}  # fmt: skip
    out["accuracy"] = acc
    half = round(mrr / 2, -3)
    frames = lost = excluded = 0
    p99 = []
    while frames < args.false_frames:
        rec = measure(ctx, 0, 0, half, 1.0)
        if rec.excluded:
            excluded += 1
            if excluded > 10:
                break
            continue
        frames += rec.sent
        lost += rec.sent - rec.forwarded
        p99.append(rec.counters["generator"].get("lateness_p99_ns"))
    out["false_loss"] = {"rate_pps": half, "frames": frames, "lost": lost,
                         "trials_excluded": excluded, "lateness_p99_ns": p99}  # fmt: skip
    return out


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        rs = [r for r in rounds if r["mode"] == mode]
        if not rs:
            continue
        med = {k: statistics.median(r[k] for r in rs if r[k] is not None)
               for k in ("mrr_pps", "reach_pps", "peak_pps")}  # fmt: skip
        out[mode] = {
            **{f"median_{k}": v for k, v in med.items()},
            "reach_over_mrr_per_round": [r["reach_over_mrr"] for r in rs],
            "median_reach_over_mrr": statistics.median(
                r["reach_over_mrr"] for r in rs if r["reach_over_mrr"]),
            "false_loss": {"frames": sum(r["false_loss"]["frames"] for r in rs),
                           "lost": sum(r["false_loss"]["lost"] for r in rs)},
        }  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--flood", type=float, default=1.0, help="seconds per flood")
    ap.add_argument("--false-frames", type=int, default=3_000_000)
    ap.add_argument("--quick", action="store_true", help="2 rounds, 1e6 false-loss frames")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.false_frames = 2, 1_000_000
    if os.geteuid() != 0:
        sys.exit("bench/reach.py needs root (namespaces): sudo .venv/bin/python bench/reach.py")
    tag = secrets.token_hex(2)
    rounds: list[dict[str, Any]] = []
    with ExitStack() as stack:
        ctxs = {}
        for mode in MODES:
            cfg = TestbedConfig(sut="router", pinning="pin-2cpu", rx_mode=mode).resolved()
            tb = stack.enter_context(Testbed(f"r{mode[0]}{tag}", cfg))
            ctxs[mode] = stack.enter_context(trials_on(tb))
        for i in range(args.rounds):
            order = MODES if i % 2 == 0 else MODES[::-1]
            for mode in order:
                r = one_round(ctxs[mode], mode, args)
                r["round"] = i
                rounds.append(r)
                print(
                    f"round {i} {mode:8} MRR {r['mrr_pps'] / 1e6:.3f} Mpps, reach "
                    f"{r['reach_pps'] / 1e6:.3f} Mpps ({r['reach_over_mrr']:.2f}x), p99 "
                    f"{(r['reach_lateness_p99_ns'] or 0) / 1e3:.1f} us, false loss "
                    f"{r['false_loss']['lost']} of {r['false_loss']['frames']}",
                    flush=True,
                )
                for step in r["ladder"]:
                    print(f"    {step['x_mrr']:.1f}x MRR {step['rate_pps'] / 1e6:.3f} Mpps: "
                          f"error {step['rate_error']:+.1e}, p99 lateness "
                          f"{(step['lateness_p99_ns'] or 0) / 1e3:.1f} us"
                          f"{'' if step['kept'] else ' (not kept)'}", flush=True)  # fmt: skip
    doc = {
        "bench": "reach",
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"kernel": platform.release(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "args": vars(args),
        "rounds": rounds,
        "summary": summary(rounds),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1)
    OUT.write_text(text)
    (OUT.parent / f"reach-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(text)
    print(json.dumps(doc["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
