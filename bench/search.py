"""Benchmark: what finding PDR@0.5% within 1% costs with (a) netassay's MLRsearch search,
(b) a PASTRAMI linear sweep of the same resolution and (c) a plain binary search.

One testbed (kernel router with the ground-truth cap ``--cap`` on the SUT egress,
pinning unpinned: the cap, not the machine, limits the load), one trial engine
(``trial.engine.measure``), 1 s trials, all three methods over the same load range
[0.5 C, 1.5 C]. What a 1 s trial can forward through the cap's policer is C + its
bucket (20 ms of traffic): that is the truth each answer is compared with.

- (a) ``search``: MLRsearch through ``netassay.shared.search_engine`` (the code 'netassay
  search' runs): goal PDR@0.5%, width 1%, exceed ratio 0.5, duration sum ``--sum``;
- (b) ``linear``: loads from 0.5 C to 1.5 C in steps of 1% of C, K = ``--runs`` trials
  each, assessed by PASTRAMI's analysis (its PDR: the highest load that, with every
  lower load, has mean PLR <= 0.5%);
- (c) ``binary``: bisection of [0.5 C, 1.5 C] with one trial per load until the
  interval is 1% of C (no repetition: one unlucky trial moves the answer).

Per method: trials, trial time (the generator's sending time), wall time, the median
overhead per trial (wall minus sending time, trial by trial, the pause before it
included; each trial is written to a store as ``netassay search`` writes it), the
trials left out as measurement faults (by kind: a busy machine makes many), the PDR
found and its error, and where the overhead goes (``overhead_breakdown_s``: the median
per trial of each phase of ``trial.engine.measure``, the generator's beyond its sending
time, the store's write and what is left between trials). Headlines: the search's trial
time over the linear sweep's (target <= 1/3), the search's median overhead per trial
(target <= 0.05 s).

Run: ``sudo .venv/bin/python bench/search.py [--runs 3] [--quick]``; writes
bench/results/search.json (and a timestamped copy) and prints it. ``--quick``: K = 1
and a coarser linear grid (2% of C), for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import platform
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.analysis.assess import assess_trials  # noqa: E402
from netassay.config import AnalysisConfig, TestbedConfig  # noqa: E402
from netassay.shared import search_engine  # noqa: E402
from netassay.shared.search_spec import Goal, SearchSpec  # noqa: E402
from netassay.store import Store  # noqa: E402
from netassay.store.loads import fault_kind  # noqa: E402
from netassay.testbed import Testbed  # noqa: E402
from netassay.testbed.topology import CAP_BUCKET_S  # noqa: E402
from netassay.trial.engine import TrialContext, measure, trials_on  # noqa: E402
from netassay.trial.record import TrialRecord  # noqa: E402

OUT = ROOT / "bench" / "results" / "search.json"
PDR = 0.005
RESOLUTION = 0.01  # of the cap


class Clocked:
    """Wraps the trial engine: every trial's record, written to ``store`` as ``netassay
    search`` writes it (one committed row as it ends), its wall time counted from the
    end of the trial before (so the pause between trials is overhead too) and its phases
    (``trial.engine.Phases``)."""

    def __init__(self, ctx: TrialContext, store: Store, method: str) -> None:
        self.ctx = ctx
        self.store = store
        self.exp, _ = store.add_experiment(
            key=f"bench-{method}", kind="search", source="bench", label=method, config={}
        )
        self.records: list[TrialRecord] = []
        self.walls: list[float] = []
        self.phases: list[dict[str, float]] = []
        self.t0 = self.last = time.monotonic()

    def __call__(self, i: int, k: int, load: float, duration: float) -> TrialRecord:
        phases: dict[str, float] = {}
        t = time.monotonic()
        phases["between_trials"] = t - self.last  # the caller's own work, before this one
        rec = measure(self.ctx, i, k, load, duration, phases=phases)
        t_store = time.monotonic()
        # the search's own numbering is in its engine: stored here by trial number
        self.store.add_trial(self.exp, replace(rec, load_index=0, repetition=len(self.records)))
        now = time.monotonic()
        phases["store_write"] = now - t_store
        phases["generator_beyond_sending"] = phases.pop("generator") - float(rec.duration_s)
        self.walls.append(now - self.last)
        self.phases.append(phases)
        self.last = now
        self.records.append(rec)
        return rec

    def breakdown(self) -> dict[str, float]:
        """The median per trial of each phase of the overhead (s)."""
        names = sorted({k for p in self.phases for k in p})
        return {k: round(statistics.median(p.get(k, 0.0) for p in self.phases), 4) for k in names}

    def summary(self, pdr_pps: float | None, truth: float) -> dict[str, Any]:
        trial_s = sum(float(r.duration_s) for r in self.records)
        over = [w - float(r.duration_s) for w, r in zip(self.walls, self.records, strict=True)]
        return {
            "trials": len(self.records),
            "excluded": sum(1 for r in self.records if r.excluded),
            "faults": dict(Counter(fault_kind(r.excluded) for r in self.records if r.excluded)),
            "trial_time_s": round(trial_s, 3),
            "wall_time_s": round(self.last - self.t0, 3),
            "median_overhead_per_trial_s": round(statistics.median(over), 3) if over else None,
            "overhead_breakdown_s": self.breakdown() if self.phases else {},
            "pdr_pps": pdr_pps,
            "pdr_error": None if pdr_pps is None else round(pdr_pps / truth - 1, 5),
        }


def run_search(
    ctx: TrialContext, store: Store, lo: float, hi: float, dsum: float, truth: float
) -> dict:
    clocked = Clocked(ctx, store, "search")
    goal = Goal(PDR, relative_width=RESOLUTION, duration_sum_s=dsum)
    out = search_engine.run_search(SearchSpec((goal,), lo, hi, 1200), clocked, retries=4)
    (g,) = out.goals
    res = clocked.summary(g.conditional_pps, truth)
    res.update(
        complete=out.complete,
        relevant_lower_bound_pps=g.lower_pps,
        relevant_upper_bound_pps=g.upper_pps,
    )
    return res


def run_linear(
    ctx: TrialContext, store: Store, lo: float, cap: float, step: float, runs: int, truth: float
) -> dict:
    clocked = Clocked(ctx, store, "linear")
    n = round((1.5 * cap - lo) / step) + 1
    rates = [lo + j * step for j in range(n)]
    for i, rate in enumerate(rates):
        for k in range(runs):
            clocked(i, k, rate, 1.0)
    use = [r for r in clocked.records if not r.excluded]
    a = assess_trials(
        np.array([r.load_index for r in use]),
        np.array([r.rate_pps for r in use], dtype=float),
        np.array([r.sent for r in use], dtype=float),
        np.array([r.forwarded for r in use], dtype=float),
        AnalysisConfig(),
    )
    res = clocked.summary(a.pdr.rate_pps, truth)
    res.update(loads=n, runs=runs, verdict=a.verdict)
    return res


def run_binary(
    ctx: TrialContext, store: Store, lo: float, hi: float, width: float, truth: float
) -> dict:
    clocked = Clocked(ctx, store, "binary")
    meets: Callable[[TrialRecord], bool] = lambda r: (r.sent - r.forwarded) <= PDR * r.sent  # noqa: E731
    i = 0
    while hi - lo > width:
        mid = (lo + hi) / 2
        rec = clocked(i, 0, mid, 1.0)
        i += 1
        if rec.excluded:  # a fault says nothing about the SUT: measure again
            continue
        lo, hi = (mid, hi) if meets(rec) else (lo, mid)
    return clocked.summary(lo, truth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cap", type=float, default=60_000.0, help="ground-truth cap, pps")
    ap.add_argument("--runs", type=int, default=3, help="K of the linear sweep")
    ap.add_argument("--sum", type=float, default=3.0, help="the search's duration sum, s")
    ap.add_argument("--quick", action="store_true", help="K = 1, a 2%% grid")
    args = ap.parse_args()
    cap = args.cap
    runs = 1 if args.quick else args.runs
    step = cap * (2 * RESOLUTION if args.quick else RESOLUTION)
    lo, hi = 0.5 * cap, 1.5 * cap
    truth = cap * (1 + CAP_BUCKET_S)  # what a 1 s trial passes through the policer
    name = "bs" + secrets.token_hex(3)
    cfg = TestbedConfig(sut_cap_pps=cap, pinning="unpinned")
    results: dict[str, Any] = {}
    t_all = time.monotonic()
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store(Path(tmp) / "bench.sqlite") as store,
        Testbed(name, cfg) as tb,
        trials_on(tb) as ctx,
    ):
        results["search"] = run_search(ctx, store, lo, hi, args.sum, truth)
        results["binary"] = run_binary(ctx, store, lo, hi, step, truth)
        results["linear"] = run_linear(ctx, store, lo, cap, step, runs, truth)
    s, lin = results["search"], results["linear"]
    ok = s["complete"] and s["pdr_error"] is not None and abs(s["pdr_error"]) <= RESOLUTION
    report = {
        "bench": "search",
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(),
        "kernel": platform.release(),
        "cap_pps": cap,
        "truth_pps": truth,
        "range_pps": [lo, hi],
        "resolution": step / cap,
        "trial_duration_s": 1.0,
        "methods": results,
        "search_found_pdr_within_1pct": ok,
        "search_over_linear_trial_time": round(s["trial_time_s"] / lin["trial_time_s"], 4),
        "search_over_linear_wall_time": round(s["wall_time_s"] / lin["wall_time_s"], 4),
        "targets": {
            "search_trial_time_at_most_a_third_of_linear": ok
            and s["trial_time_s"] <= lin["trial_time_s"] / 3,
            "median_overhead_per_trial_at_most_0.15_s": (s["median_overhead_per_trial_s"] or 9)
            <= 0.15,
            "median_overhead_per_trial_at_most_0.05_s": (s["median_overhead_per_trial_s"] or 9)
            <= 0.05,
        },
        "bench_wall_s": round(time.monotonic() - t_all, 1),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    shutil.copy(OUT, OUT.with_name(f"search-{report['utc'].replace(':', '')}.json"))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
