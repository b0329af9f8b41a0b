"""Benchmark: reading and assessing PASTRAMI files, importing, assessing a store, memory.

Side by side in one run, on ~1.03 M synthetic trials (2060 files of 10 loads x 50 runs):
- netassay, files: ``iter_assessments`` on the raw files (parse into numpy columns,
  statistics, bounds, saturation, verdict), with and without serializing each
  assessment as ``assess --json`` does; and the real CLI ``netassay assess --json``;
- the peer: ``PEER`` below, the plain 40-line Python script a notebook user writes to
  get the same per-load statistics (json per line, numpy per load, Student-t from scipy
  cached per K, TIR), in this process and as a script of its own (start-up included,
  against the CLI); its per-load numbers are checked against netassay's;
- netassay, store: ``import pastrami`` into a real SQLite store, then assess from it.

Runs are interleaved (the machine is shared and noisy); medians of ``--repeat`` runs
are reported, with every run. Memory: peak traced allocation while assessing a store
of N and of 2N experiments of the same size; it must not grow with N.
Writes bench/results/analysis.json and prints it. ``--quick`` skips the store parts.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from netassay.analysis.synthetic import realistic_throughput
from netassay.config import AnalysisConfig
from netassay.shared.sweep_analyse import assess_store, iter_assessments
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


# ---- the peer: a plain script, as a user would write it ------------------------------
PEER = """
import json, sys
from pathlib import Path

import numpy as np
from scipy import stats


def plain_script(folder):
    # per load: mean PLR, std, UCL95, Delta_UCL95, T; per curve: TIR, first load past PDR
    t975, trials, means_of = {}, 0, {}
    for f in sorted(Path(folder).rglob("*.txt")):
        rates, means = [], []
        for line in f.read_text().splitlines():
            row = json.loads(line)
            runs = np.array(row[1:], dtype=np.float64)
            plr = 1.0 - runs[:, 1] / runs[:, 0]
            k = plr.size
            trials += k
            mean, std = plr.mean(), plr.std(ddof=1)
            if k not in t975:
                t975[k] = stats.t.ppf(0.975, k - 1)
            ucl = mean + t975[k] * std / np.sqrt(k)
            delta = (ucl - mean) / mean if mean > 0 else np.nan
            rates.append(row[0][0])
            means.append(mean)
        o, m = np.array(rates, dtype=np.float64), np.array(means)
        thr = o * (1 - m)
        tir = np.diff(thr) / np.diff(o)
        over = np.flatnonzero(m > 0.005)
        past_pdr = int(over[0]) if over.size else None
        means_of[str(f)] = means
    return trials, means_of


if __name__ == "__main__":
    print(plain_script(sys.argv[1])[0])
"""


@functools.cache
def _peer():
    ns: dict[str, object] = {"__name__": "peer"}
    exec(PEER, ns)  # its imports happen here, once, before anything is timed
    return ns["plain_script"]


def plain_script(folder: Path) -> tuple[int, dict[str, list[float]]]:
    """The peer (PEER above) in this process: (trials, mean PLR per load of each file)."""
    return _peer()(folder)


def plain_script_cli(folder: Path) -> tuple[int, None]:
    """The peer run as a script of its own, as a user runs it (start-up included)."""
    cmd = [sys.executable, "-c", PEER, str(folder)]
    cp = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
    return int(cp.stdout), None


# ---- netassay ----------------------------------------------------------------------
def assess_files(folder: Path, serialize: bool = False) -> tuple[int, dict[str, list[float]]]:
    trials, means_of = 0, {}
    for a in iter_assessments([folder], AnalysisConfig()):
        trials += int(a.table.k.sum())
        means_of[a.source] = a.table.plr.tolist()
        if serialize:
            json.dumps(a.to_json(), allow_nan=False)
    return trials, means_of


def assess_cli(folder: Path) -> tuple[str, None]:
    """The real CLI, JSON to a pipe; its output is read after the clock stops."""
    cmd = [sys.executable, "-m", "netassay", "assess", str(folder), "--json"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout, None


def trials_in(jsonl: str) -> int:
    return sum(x["k"] for line in jsonl.splitlines() for x in json.loads(line)["loads"])


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


def summary(trials: int, times: list[float]) -> dict[str, object]:
    med = statistics.median(times)
    return {
        "trials": trials,
        "seconds_median": round(med, 3),
        "seconds_all": [round(t, 3) for t in times],
        "trials_per_s": round(trials / med),
    }


def files_comparison(raw: Path, repeat: int) -> dict[str, object]:
    """netassay on the files against the plain script, interleaved, same numbers."""
    names = ("peer", "netassay", "netassay_json", "peer_cli", "cli")
    runs: dict[str, list[float]] = {name: [] for name in names}
    counts: dict[str, int] = {}
    worst = 0.0  # largest difference of a per-load mean PLR, netassay against the peer
    _peer()  # imported in this process before timing, as netassay is
    for _ in range(repeat):
        for name, fn in (
            ("peer", lambda: plain_script(raw)),
            ("netassay", lambda: assess_files(raw)),
            ("netassay_json", lambda: assess_files(raw, serialize=True)),
            ("peer_cli", lambda: plain_script_cli(raw)),
            ("cli", lambda: assess_cli(raw)),
        ):
            (n, means), t = timed(fn)
            runs[name].append(t)
            counts[name] = trials_in(n) if name == "cli" else n
            if name == "peer":
                peer_means = means
            elif means is not None:
                assert means.keys() == peer_means.keys()
                worst = max(
                    worst,
                    max(float(np.max(np.abs(np.subtract(means[f], peer_means[f])))) for f in means),
                )
    peer, peer_cli = statistics.median(runs["peer"]), statistics.median(runs["peer_cli"])
    result = {
        "peer_plain_script": summary(counts["peer"], runs["peer"]),
        "netassay_iter_assessments": summary(counts["netassay"], runs["netassay"]),
        "netassay_iter_assessments_and_json": summary(
            counts["netassay_json"], runs["netassay_json"]
        ),
        "peer_plain_script_as_a_script": summary(counts["peer_cli"], runs["peer_cli"]),
        "netassay_cli_assess_json": summary(counts["cli"], runs["cli"]),
        "max_abs_diff_per_load_plr_vs_peer": worst,
    }
    for key, name, base in (
        ("speedup_over_peer", "netassay", peer),
        ("speedup_over_peer_with_json", "netassay_json", peer),
        ("speedup_cli_over_peer_script", "cli", peer_cli),
    ):
        result[key] = round(base / statistics.median(runs[name]), 2)
    return result


def store_parts(d: Path, files: list[Path], n_exp: int, repeat: int) -> dict[str, object]:
    n_imp, t_imp = timed(import_all, d / "raw", d / "r.db")
    times = []
    for _ in range(repeat):
        (n_ass, n_verdicts), t = timed(assess_all, d / "r.db")
        times.append(t)
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
    return {
        "import": {
            "trials": n_imp,
            "seconds": round(t_imp, 3),
            "trials_per_s": round(n_imp / t_imp),
        },
        "assess_from_store": {**summary(n_ass, times), "verdicts": n_verdicts},
        "memory_peak_bytes": {
            f"{len(half)}_experiments": mem_small,
            f"{2 * len(half)}_experiments": mem_large,
            "ratio": round(mem_large / mem_small, 3),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1_030_000)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each (median reported)")
    ap.add_argument("--quick", action="store_true", help="files only: skip the store parts")
    args = ap.parse_args()
    n_exp = max(1, args.trials // (args.loads * args.runs))
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "raw").mkdir()
        total = write_files(d / "raw", n_exp, args.loads, args.runs)
        files = find_result_files([d / "raw"])
        result: dict[str, object] = {
            "trials": total,
            "experiments": n_exp,
            "loads_per_experiment": args.loads,
            "runs_per_load": args.runs,
            "repeat": args.repeat,
            "files": files_comparison(d / "raw", args.repeat),
        }
        if not args.quick:
            result.update(store_parts(d, files, n_exp, max(1, args.repeat // 2)))
    result["python"] = sys.version.split()[0]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
