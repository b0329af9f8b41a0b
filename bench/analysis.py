"""Benchmark: import + assess throughput (trials/s) and memory on 1,000,000 synthetic trials.

Side by side in one run:
- netassay: `import pastrami` into a real SQLite store, then assess from the store;
- baseline: a plain per-trial Python loop over the same raw files, the way a notebook
  computes per-load mean, std, UCL95 and TIR (json per line, lists, statistics module).

Memory: peak traced allocation while assessing a store of N experiments and of 2N
experiments of the same size; it must not grow with the number of experiments.
Writes bench/results/analysis.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy import stats as sps

from netassay.analysis.synthetic import realistic_throughput
from netassay.config import AnalysisConfig
from netassay.report.loader import assess_store
from netassay.store import Store
from netassay.store.pastrami import KIND, find_result_files, import_files, parse_file

OUT = Path(__file__).resolve().parent / "results" / "analysis.json"


def write_files(folder: Path, n_exp: int, loads: int, k: int, seed: int = 1) -> int:
    """Write n_exp PASTRAMI raw files with realistic curves and binomial noise."""
    rng = np.random.default_rng(seed)
    rates = np.arange(1, loads + 1) * 2e5
    for e in range(n_exp):
        sat = rng.uniform(0.6, 1.6) * 1e6
        plr = np.clip(1 - realistic_throughput(rates, sat_load_pps=sat) / rates, 0, 1)
        lost = rng.binomial(np.repeat(rates, k).astype(np.int64), np.repeat(plr, k))
        lost = lost.reshape(loads, k)
        lines = []
        for i, rate in enumerate(rates):
            sent = int(rate)  # 1 s trials: sent = offered load x duration
            runs = [[sent, int(sent - x), 0] for x in lost[i]]
            lines.append(json.dumps([[int(rate), 0], *runs]))
        (folder / f"bench{e:05d}_raw_{k}_exp_t_1_k6.1_intel_ns.txt").write_text("\n".join(lines))
    return n_exp * loads * k


def baseline(files: list[Path]) -> int:
    """Per-trial Python loop, notebook style: returns the number of trials processed."""
    n = 0
    for f in files:
        rates, plrs = [], []
        for line in f.read_text().splitlines():
            row = json.loads(line)
            per = [1 - rx / tx for tx, rx, _ in row[1:]]
            n += len(per)
            mean = max(sum(per) / len(per), 1e-6)
            sd = statistics.stdev(per)
            t = sps.t.ppf(0.975, len(per) - 1)
            _ucl = mean + t * sd / math.sqrt(len(per))
            rates.append(row[0][0])
            plrs.append(mean)
        thr = [o * (1 - p) for o, p in zip(rates, plrs, strict=True)]
        _tir = [(thr[i] - thr[i - 1]) / (rates[i] - rates[i - 1]) for i in range(1, len(rates))]
    return n


def import_all(folder: Path, db: Path) -> int:
    with Store(db) as store:
        return import_files(store, [folder])[2]


def assess_all(db: Path) -> tuple[int, int]:
    n = verdicts = 0
    with Store(db, readonly=True) as store:
        for a in assess_store(store, AnalysisConfig()):
            n += int(a.table.k.sum())
            verdicts += 1
    return n, verdicts


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def peak_memory(db: Path) -> int:
    tracemalloc.start()
    assess_all(db)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="assess passes (median reported)")
    args = ap.parse_args()
    n_exp = max(1, args.trials // (args.loads * args.runs))
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "raw").mkdir()
        total = write_files(d / "raw", n_exp, args.loads, args.runs)
        files = find_result_files([d / "raw"])
        n_imp, t_imp = timed(import_all, d / "raw", d / "r.db")
        assess_times, base_times = [], []
        for _ in range(args.repeat):  # interleaved: the machine is noisy
            (n_ass, n_verdicts), t = timed(assess_all, d / "r.db")
            assess_times.append(t)
            n_base, t = timed(baseline, files)
            base_times.append(t)
        # memory: the same experiments, N and 2N of them
        small, large = d / "small.db", d / "large.db"
        half = sorted(files)[: max(1, n_exp // 4)]
        for db, part in ((small, half), (large, half * 2)):
            with Store(db) as store:
                for i, f in enumerate(part):
                    e = parse_file(f)
                    store.import_experiment(
                        key=f"{e.key}-{i}",
                        kind=KIND,
                        source=e.source,
                        label=e.label,
                        config=e.config,
                        metadata=e.metadata,
                        trials=e.trials,
                    )
        mem_small, mem_large = peak_memory(small), peak_memory(large)
    t_ass, t_base = statistics.median(assess_times), statistics.median(base_times)
    result = {
        "trials": total,
        "experiments": n_exp,
        "loads_per_experiment": args.loads,
        "runs_per_load": args.runs,
        "import": {
            "trials": n_imp,
            "seconds": round(t_imp, 3),
            "trials_per_s": round(n_imp / t_imp),
        },
        "assess_from_store": {
            "trials": n_ass,
            "verdicts": n_verdicts,
            "seconds_median": round(t_ass, 3),
            "seconds_all": [round(t, 3) for t in assess_times],
            "trials_per_s": round(n_ass / t_ass),
            "target_trials_per_s": 500_000,
            "meets_target": n_ass / t_ass >= 500_000,
        },
        "baseline_python_loop_from_files": {
            "trials": n_base,
            "seconds_median": round(t_base, 3),
            "trials_per_s": round(n_base / t_base),
        },
        "assess_speedup_over_baseline": round(t_base / t_ass, 2),
        "memory_peak_bytes": {
            f"{len(half)}_experiments": mem_small,
            f"{2 * len(half)}_experiments": mem_large,
            "ratio": round(mem_large / mem_small, 3),
        },
        "python": sys.version.split()[0],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
