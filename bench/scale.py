"""The kernel router's scale curves: its maximum receive rate (MRR, a flood) against
the FIB's size, the nft rules' count (linear rules and the same keys as one set, side
by side), and the flows' count (in order, in a random order, through conntrack), on
this host.

Each series builds all its testbeds at once (one per variant and value, as
``netassay flood --nft-rules 10,1k,10k`` would one after another) and floods them in
turn, round after round, so that a busy moment of the host hits every point alike; a
point's MRR is its floods' median. Writes bench/results/scale.json (every flood, each
testbed's build as ``testbed show`` gives it) and prints a table per series.
Needs root; its testbeds are named ``bsc<n>`` and removed even on failure. It floods:
run it when no other measurement runs on the host.

Run: ``sudo .venv/bin/python bench/scale.py [--quick] [--rounds 3] [--only rules fib4]``
(``--quick``: fewer values, no million-route FIB, one round unless ``--rounds``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.config import TestbedConfig  # noqa: E402
from netassay.testbed import Testbed  # noqa: E402
from netassay.testbed import topology as T  # noqa: E402
from netassay.trial.engine import trials_on  # noqa: E402
from netassay.trial.flood import flood, flood_path  # noqa: E402

OUT = ROOT / "bench" / "results" / "scale.json"
FLOOD_S = 0.5
BASE = TestbedConfig()
CT = {"conntrack": "on", "conntrack_max": 1_100_000}  # past a million flows


@dataclass(frozen=True)
class Series:
    """The knob varied over ``values`` (``quick``: the short run's), once per variant:
    a name and the knobs every testbed of it has."""

    name: str
    knob: str
    values: list[int]
    quick: list[int]
    variants: dict[str, dict[str, Any]]


SERIES = [
    Series("rules", "nft_rules", [10, 100, 1000, 10_000, 100_000], [10, 1000, 10_000],
           {"linear": {}, "set": {"nft_set": True}}),
    Series("fib4", "routes", [1, 1000, 10_000, 65_280], [1, 1000, 65_280],
           {"100k flows": {"flows": 100_000}}),
    Series("fib6", "routes", [1, 1000, 100_000, 1_000_000], [1, 100_000],
           {"100k flows": {"ip_version": 6, "flows": 100_000}}),
    Series("flows", "flows", [1, 1000, 100_000, 1_000_000], [1, 100_000, 1_000_000],
           {"incremental": {}, "random": {"flow_order": "random"}, "conntrack": CT}),
]  # fmt: skip


def series(s: Series, values: list[int], rounds: int) -> dict[str, Any]:
    """One series: its testbeds built at once, flooded in turn ``rounds`` times."""
    points = [(v, x) for x in s.variants for v in values]
    names = [f"bsc{i}" for i in range(len(points))]
    floods: dict[tuple[int, str], list[dict[str, Any]]] = {p: [] for p in points}
    built: dict[tuple[int, str], Any] = {}
    t0 = time.monotonic()
    try:
        with ExitStack() as stack:
            ctxs = {}
            for n, (v, x) in zip(names, points, strict=True):
                cfg = replace(BASE, **s.variants[x], **{s.knob: v})
                tb = stack.enter_context(Testbed(n, cfg))
                built[v, x] = tb.state.get("scale", {})
                ctxs[v, x] = stack.enter_context(trials_on(tb))
                stack.enter_context(flood_path(tb))
            build_s = time.monotonic() - t0
            for _ in range(rounds):
                for p, ctx in ctxs.items():
                    floods[p].append(flood(ctx, FLOOD_S))
    finally:
        T.cleanup(set(names))
    out = []
    for v, x in points:
        fl = floods[v, x]
        mrr = [f["forwarded_pps"] for f in fl]
        out.append({
            "variant": x,
            "value": v,
            "mrr_pps": statistics.median(mrr),
            "mrr_runs_pps": mrr,
            "offered_pps": [f["offered_pps"] for f in fl],
            "saturated": all(f["saturated"] for f in fl),
            "loss_location": fl[-1]["loss_location"],
            "sut": fl[-1].get("sut"),
            "built": built[v, x],
        })  # fmt: skip
    return {"series": s.name, "knob": s.knob, "variants": s.variants, "rounds": rounds,
            "flood_s": FLOOD_S, "build_s": round(build_s, 1), "points": out}  # fmt: skip


def table(s: dict[str, Any]) -> str:
    """The series' MRR by variant and value, each against its variant's first value."""
    lines = [f"{s['series']}: MRR against --{s['knob'].replace('_', '-')}"]
    first: dict[str, float] = {}
    for p in s["points"]:
        base = first.setdefault(p["variant"], p["mrr_pps"])
        runs = " ".join(f"{r / 1e6:.3f}" for r in p["mrr_runs_pps"])
        lines.append(f"  {p['variant']:>12} {p['value']:>10,}  {p['mrr_pps'] / 1e6:.3f} Mpps"
                     f"  x{p['mrr_pps'] / base:.3f}  (runs {runs})")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--quick", action="store_true", help="fewer values, one round")
    ap.add_argument("--rounds", type=int, default=None, help="floods of each point (3)")
    ap.add_argument("--only", nargs="*", default=None, help="series names (default: all)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/scale.py: needs root (network namespaces); run with sudo")
        return 6
    os.environ.setdefault("NETASSAY_RUN_DIR", "/tmp/netassay-bench-scale")
    rounds = args.rounds or (1 if args.quick else 3)
    result: dict[str, Any] = {"started_utc": time.time(), "quick": args.quick, "series": []}
    result["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
    for spec in SERIES:
        if args.only and spec.name not in args.only:
            continue
        s = series(spec, spec.quick if args.quick else spec.values, rounds)
        s["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        result["series"].append(s)
        print(table(s), flush=True)
    result["finished_utc"] = time.time()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
