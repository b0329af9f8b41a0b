"""Benchmark: what ``netassay export`` costs per format on a large store.

Builds a store of ``--trials`` trials (200,000 by default: 20 experiments of 20 loads x
500 runs, the rows as a sweep writes them, as ``bench/store.py`` does), then runs the
real command ``--repeat`` times per format, interleaved: CSV and JSON lines to a file,
Parquet to a folder. For each: the median wall time, the peak resident memory of the
command (its rusage) and the size written. Writes bench/results/export.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.store import Store  # noqa: E402
from store import build  # noqa: E402  (the store bench/store.py builds: rows as a sweep writes them)

OUT = ROOT / "bench" / "results" / "export.json"
FORMATS = ("csv", "jsonl", "parquet")


def size(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.iterdir())
    return path.stat().st_size


def once(db: Path, fmt: str, out: Path) -> tuple[float, float, int]:
    """One export: (wall seconds, peak resident MB, bytes written)."""
    if out.is_dir():
        shutil.rmtree(out)
    argv = [sys.executable, "-m", "netassay", "export", "--db", str(db), "--format", fmt]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0 = time.perf_counter()
    p = subprocess.Popen([*argv, "--out", str(out)], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"netassay export --format {fmt} failed (exit {p.returncode})")
    return wall, usage.ru_maxrss / 1024, size(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="netassay-bench-") as tmp:
        db = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        build(db, args.trials)
        build_s = time.perf_counter() - t0
        runs: dict[str, list[tuple[float, float, int]]] = {f: [] for f in FORMATS}
        for _ in range(args.repeat):
            for fmt in FORMATS:
                runs[fmt].append(once(db, fmt, Path(tmp) / f"out.{fmt}"))
        with Store(db, readonly=True, check=False) as st:
            n = st.count_trials()
        store_mb = db.stat().st_size / 1e6
    out = {
        "trials": n,
        "store_mb": round(store_mb, 1),
        "build_s": round(build_s, 1),
        "formats": {
            fmt: {
                "median_s": round(statistics.median(r[0] for r in rs), 2),
                "peak_rss_mb": round(max(r[1] for r in rs), 1),
                "written_mb": round(rs[-1][2] / 1e6, 2),
                "runs_s": [round(r[0], 2) for r in rs],
            }
            for fmt, rs in runs.items()
        },
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
