"""The kernel router's scale curves: its maximum receive rate (MRR, a flood) against
the FIB's size, the nft rules' count (linear rules and the same keys as one set, side
by side), and the flows' count (in order, in a random order, through conntrack); and
the busy-polling data planes': Open vSwitch's MRR against its flow table's size
(``--ovs-rules``), and Open vSwitch's, testpmd's and l3fwd's against the flows' count;
on this host.

Each kernel series builds all its testbeds at once (one per variant and value, as
``netassay flood --nft-rules 10,1k,10k`` would one after another) and floods them in
turn, round after round, so that a busy moment of the host hits every point alike; a
data plane that busy-polls its CPU (OVS, DPDK) is built and flooded one testbed at a
time, since two of them up at once would take each other's CPU. A point's MRR is its
floods' median. Writes bench/results/scale.json (every flood, each
testbed's build as ``testbed show`` gives it) and the curves in
bench/results/scale.png and .svg, and prints a table per series.
Needs root; its testbeds are named ``bsc<n>`` and removed even on failure. It floods:
run it when no other measurement runs on the host.

Run: ``sudo .venv/bin/python bench/scale.py [--quick] [--rounds 3] [--only rules fib4]``
(``--quick``: fewer values, no million-route FIB, one round unless ``--rounds``);
``--draw`` draws the curves of the last run's scale.json again, measuring nothing.
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
from netassay.testbed import Testbed, topology  # noqa: E402
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
    # a busy-polling data plane spins on the SUT's CPU from the moment it is up: its
    # testbeds are built and flooded one at a time, or they would take each other's CPU
    one_at_a_time: bool = False


SERIES = [
    Series("rules", "nft_rules", [10, 100, 1000, 10_000, 100_000], [10, 1000, 10_000],
           {"linear": {}, "set": {"nft_set": True}}),
    Series("fib4", "routes", [1, 1000, 10_000, 65_280], [1, 1000, 65_280],
           {"100k flows": {"flows": 100_000}}),
    Series("fib6", "routes", [1, 1000, 100_000, 1_000_000], [1, 100_000],
           {"100k flows": {"ip_version": 6, "flows": 100_000}}),
    Series("flows", "flows", [1, 1000, 100_000, 1_000_000], [1, 100_000, 1_000_000],
           {"incremental": {}, "random": {"flow_order": "random"}, "conntrack": CT}),
    Series("ovs-rules", "ovs_rules", [0, 1000, 10_000, 100_000], [0, 10_000],
           {"ovs": {"sut": "ovs"}}, one_at_a_time=True),
    Series("dp-flows", "flows", [1, 100_000, 1_000_000], [1, 100_000],
           {k: {"sut": k} for k in ("ovs", "testpmd", "l3fwd")}, one_at_a_time=True),
]  # fmt: skip


def series(s: Series, values: list[int], rounds: int) -> dict[str, Any]:
    """One series: its testbeds built at once and flooded in turn ``rounds`` times (one
    at a time, each flooded ``rounds`` times, for a busy-polling data plane)."""
    points = [(v, x) for x in s.variants for v in values]
    names = [f"bsc{i}" for i in range(len(points))]
    floods: dict[tuple[int, str], list[dict[str, Any]]] = {p: [] for p in points}
    built: dict[tuple[int, str], Any] = {}
    groups = [[p] for p in points] if s.one_at_a_time else [points]
    build_s = 0.0  # the testbeds' builds, the floods' time left out
    try:
        for group in groups:
            t0 = time.monotonic()
            with ExitStack() as stack:
                ctxs = {}
                for v, x in group:
                    cfg = replace(BASE, **s.variants[x], **{s.knob: v})
                    tb = stack.enter_context(Testbed(names[points.index((v, x))], cfg))
                    built[v, x] = tb.state.get("scale", {})
                    ctxs[v, x] = stack.enter_context(trials_on(tb))
                    stack.enter_context(flood_path(tb))
                build_s += time.monotonic() - t0
                for _ in range(rounds):
                    for p, ctx in ctxs.items():
                        floods[p].append(flood(ctx, FLOOD_S))
    finally:
        topology.cleanup(set(names))
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


def draw(result: dict[str, Any], stem: Path) -> None:
    """The curves in one figure (``stem``.png and .svg): a panel per series, the MRR
    against the knob's value (a log axis), a line per variant, each floods' spread as
    a bar from its lowest to its highest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = result["series"]
    cols = min(3, len(found))
    rows = -(-len(found) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(found) :]:
        ax.set_visible(False)
    for ax, s in zip(axes.flat, found, strict=False):
        for variant in s["variants"]:
            pts = [p for p in s["points"] if p["variant"] == variant]
            x = [max(p["value"], 1) for p in pts]  # 0 rules drawn at 1 on the log axis
            mid = [p["mrr_pps"] / 1e6 for p in pts]
            lo = [m - min(p["mrr_runs_pps"]) / 1e6 for m, p in zip(mid, pts, strict=True)]
            hi = [max(p["mrr_runs_pps"]) / 1e6 - m for m, p in zip(mid, pts, strict=True)]
            ax.errorbar(x, mid, yerr=[lo, hi], marker="o", capsize=3, label=variant)
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_title(s["series"])
        ax.set_xlabel(f"--{s['knob'].replace('_', '-')}")
        ax.set_ylabel("MRR (Mpps, median of the floods)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(stem.with_suffix(f".{ext}"), dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--quick", action="store_true", help="fewer values, one round")
    ap.add_argument("--rounds", type=int, default=None, help="floods of each point (3)")
    ap.add_argument("--only", nargs="*", default=None, help="series names (default: all)")
    ap.add_argument("--draw", action="store_true", help="only draw the curves of scale.json")
    args = ap.parse_args()
    if args.draw:
        draw(json.loads(OUT.read_text()), OUT.with_suffix(""))
        return 0
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
    if result["series"]:
        draw(result, OUT.with_suffix(""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
