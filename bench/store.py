"""Benchmark: what checking a store before writing to it costs.

Every command that writes to a store first runs SQLite's ``quick_check`` on it and
refuses a damaged one; every reader runs it too and warns. This measures that check on
a large store (``--trials``, 1M by default: 100 experiments of 20 loads x 500 runs, the
trial rows as a sweep writes them) side by side with opening it unchecked, interleaved,
``--repeat`` times each: the median cost per open, for writing and for reading, and
the integrity check ``db check`` runs, for scale. The page cache is warm after the
first open (what a user who runs several commands in a row sees). Writes
bench/results/store.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.store import Store  # noqa: E402
from netassay.trial.record import TrialRecord  # noqa: E402

OUT = ROOT / "bench" / "results" / "store.json"


def build(path: Path, trials: int) -> None:
    per_exp = 20 * 500
    with Store(path) as st:
        for e in range(max(1, trials // per_exp)):
            exp, _ = st.add_experiment(
                key=f"bench-{e}", kind="sweep", source="bench", label=f"e{e}",
                config={"rates_pps": [1e4 * (i + 1) for i in range(20)], "runs": 500},
            )  # fmt: skip
            st.add_trials(exp, [
                TrialRecord(i, r, 1e4 * (i + 1), 1.0, 10_000 * (i + 1), 9_990 * (i + 1),
                            "bench", achieved_rate_pps=1e4 * (i + 1),
                            loss_location={"sut_backlog": 10 * (i + 1)},
                            counters={"sink": {"xdp": 9_990 * (i + 1)}})
                for i in range(20) for r in range(500)
            ])  # fmt: skip


def timed(path: Path, **kw: bool) -> float:
    t0 = time.perf_counter()
    with Store(path, **kw) as st:
        st.schema_version()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="netassay-bench-") as tmp:
        db = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        build(db, args.trials)
        build_s = time.perf_counter() - t0
        size = db.stat().st_size
        cases = {
            "write_checked": {}, "write_unchecked": {"check": False},
            "read_checked": {"readonly": True},
            "read_unchecked": {"readonly": True, "check": False},
        }  # fmt: skip
        runs: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.repeat):
            for name, kw in cases.items():
                runs[name].append(timed(db, **kw))
        with Store(db, readonly=True, check=False) as st:
            t0 = time.perf_counter()
            st.integrity_problems()
            integrity_s = time.perf_counter() - t0
            n = st.count_trials()
    med = {k: statistics.median(v) for k, v in runs.items()}
    out = {
        "trials": n,
        "store_mb": round(size / 1e6, 1),
        "build_s": round(build_s, 1),
        "median_open_s": {k: round(v, 4) for k, v in med.items()},
        "check_cost_s": {
            "write": round(med["write_checked"] - med["write_unchecked"], 4),
            "read": round(med["read_checked"] - med["read_unchecked"], 4),
        },
        "db_check_integrity_s": round(integrity_s, 3),
        "runs": {k: [round(x, 4) for x in v] for k, v in runs.items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
