"""Benchmark: what a busy host does to netassay's answers, quiet and busy side by side.

The machine's other work is ``stress-ng`` holding one CPU at ``--load`` percent (default
50), as another tenant of a shared VM would: CPU 0 (the generator's, in the default
pinning on two CPUs) or CPU 1 (the SUT's receive work). Under each condition (quiet,
generator's CPU busy, SUT's CPU busy), in one run, the real commands measure a kernel
router capped by the ground-truth policer at ``--cap`` pps:

- ``sweep``: 8 loads from 0.8 to 1.3 times the cap, K = 3 trials of 1 s;
- ``search``: 'netassay search' with its defaults (the max load is the generator's
  probed peak, which a paced trial on a busy CPU may not keep).

Per command and condition: the exit code, wall time, trials stored and used, trials
left out (by kind), attempts discarded and repeated, trials left out that lost nothing
(a stall's burst can only add loss: the target is none), the PDR@0.5% found and its
error against the cap, the verdict or the search's completeness and any max load
lowered to the generator's reach.

Run: ``sudo .venv/bin/python bench/busy.py [--rounds 1] [--cap 200k] [--load 50]``;
writes bench/results/busy.json (and a timestamped copy) and prints it.
"""

from __future__ import annotations

import argparse
import json
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.store.db import Store  # noqa: E402
from netassay.store.loads import fault_kind  # noqa: E402
from netassay.traffic.load import cpu_hog  # noqa: E402
from netassay.units import parse_rate  # noqa: E402

OUT = ROOT / "bench" / "results" / "busy.json"
NETASSAY = str(Path(sys.executable).parent / "netassay")
CONDITIONS = {"quiet": None, "generator-busy": 0, "sut-busy": 1}


def trials_of(db: Path) -> dict[str, Any]:
    with Store(db) as st:
        exp = next(st.experiments())
        trials = st.trials(exp.id)
    excluded = [t for t in trials if t["excluded"]]
    return {
        "trials": len(trials),
        "used": len(trials) - len(excluded),
        "excluded_by_kind": dict(Counter(fault_kind(t["excluded"]) for t in excluded)),
        "attempts_discarded": sum(
            1 for t in trials for w in t["warnings"] if w.startswith("attempt ")
        ),
        "zero_loss_excluded": sum(1 for t in excluded if t["sent"] - t["received"] <= 0),
        "stalls_without_harm": sum(
            1 for t in trials for w in t["warnings"] if w.startswith("stall without harm")
        ),
    }


def command(argv: list[str], db: Path) -> tuple[int, float, dict[str, Any]]:
    t0 = time.monotonic()
    res = subprocess.run([NETASSAY, *argv, "--db", str(db), "--json"],
                         capture_output=True, text=True, timeout=1800)  # fmt: skip
    wall = time.monotonic() - t0
    try:
        out = json.loads(res.stdout) if res.stdout.strip() else {}
    except ValueError:
        out = {}
    if res.returncode != 0:
        out["stderr_tail"] = res.stderr.strip().splitlines()[-3:]
    return res.returncode, wall, out


def sweep(name: str, cap: float, db: Path) -> dict[str, Any]:
    rates = ",".join(str(round(cap * f)) for f in (0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3))
    argv = ["sweep", "--name", name, "--sut-cap", str(int(cap)), "--rates", rates,
            "--runs", "3", "--duration", "1s", "--settle", "0.1s"]  # fmt: skip
    rc, wall, a = command(argv, db)
    pdr = a.get("pdr_pps")
    return {
        "rc": rc, "wall_s": round(wall, 1), "verdict": a.get("verdict"),
        "reason": a.get("reason"), "pdr_pps": pdr,
        "pdr_error": None if pdr is None else round(pdr / cap - 1, 4),
        **(trials_of(db) if db.exists() else {}),
        **({"stderr_tail": a["stderr_tail"]} if "stderr_tail" in a else {}),
    }  # fmt: skip


def search(name: str, cap: float, db: Path) -> dict[str, Any]:
    rc, wall, out = command(["search", "--name", name, "--sut-cap", str(int(cap))], db)
    goals = {g["goal"]: g for g in out.get("goals", [])}
    pdr = goals.get("pdr:0.005", {}).get("conditional_throughput_pps")
    return {
        "rc": rc, "wall_s": round(wall, 1), "complete": out.get("complete"),
        "generator_peak_pps": out.get("generator_peak_pps"),
        "max_load_pps": out.get("max_load_pps"),
        "max_load_lowered_to_reach": out.get("generator_reach_pps") is not None,
        "pdr_pps": pdr, "pdr_error": None if pdr is None else round(pdr / cap - 1, 4),
        **(trials_of(db) if db.exists() else {}),
        **({"stderr_tail": out["stderr_tail"]} if "stderr_tail" in out else {}),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--cap", default="200k")
    ap.add_argument("--load", type=int, default=50, help="stress-ng's load on the busy CPU, %%")
    args = ap.parse_args()
    if shutil.which("stress-ng") is None:
        sys.exit("bench/busy.py: stress-ng is not installed; run: make setup")
    cap = parse_rate(args.cap)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="netassay-busy-") as tmp:
        for r in range(args.rounds):
            for cond, cpu in CONDITIONS.items():  # side by side, in one run
                name = "bb" + secrets.token_hex(3)
                with cpu_hog(cpu, args.load):
                    for what, fn in (("sweep", sweep), ("search", search)):
                        db = Path(tmp) / f"{r}-{cond}-{what}.db"
                        row = {"round": r, "condition": cond, "command": what, **fn(name, cap, db)}
                        rows.append(row)
                        print(json.dumps(row), file=sys.stderr)
    report = {
        "bench": "busy", "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(), "kernel": platform.release(), "cap_pps": cap,
        "busy_load_pct": args.load, "conditions": CONDITIONS, "rows": rows,
    }  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    shutil.copy(OUT, OUT.with_name(f"busy-{report['utc'].replace(':', '')}.json"))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
