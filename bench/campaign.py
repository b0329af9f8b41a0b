"""Benchmark: what the campaign layer adds per cell, against running the same sweeps one by
one with ``netassay sweep``.

The same cells (``--cells`` ground-truth caps, kernel router, pin-2cpu; ``--loads`` loads
x ``--runs`` runs of ``--duration`` s, no peak probe) run (a) as one ``netassay campaign run`` (the
in-process LocalCluster, a child process running the sweep per cell, the coordinator
copying each cell into the campaign store) and (b) as the same ``netassay sweep`` commands one after
another, each into the same store. The two alternate (a b, then b a, ...) ``--rounds``
times, so that the machine's drift falls on both.

Per round: the wall time of each, and the campaign's own overhead measured inside it:
its wall time minus the sum of its cells' child processes (``cell_wall_s`` stored with
each cell): cluster start and stop, scheduling, the testbed lock check, reading each
cell's scratch store and writing it into the campaign's. Headlines: the median overhead
per cell (s) and its share of the campaign's wall time (target: under 2%), the median
ratio of the two wall times (campaign / one by one), and of the cells' own processes to
the sweeps run alone. The overhead is mostly fixed per campaign (importing Dask, ~0.55 s
here, and starting the coordinator), not per cell: its share falls as cells grow.

Run: ``sudo .venv/bin/python bench/campaign.py [--rounds 2] [--cells 4]``; writes
bench/results/campaign.json (and a timestamped copy) and prints it.
"""

from __future__ import annotations

import argparse
import json
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.campaign import spec as campaign_spec  # noqa: E402
from netassay.store.db import Store  # noqa: E402

OUT = ROOT / "bench" / "results" / "campaign.json"


def _file(name: str, cells: int, loads: int, runs: int, duration: float) -> str:
    caps = ", ".join(f'"{60 + 20 * i}k"' for i in range(cells))
    rates = ",".join(f"{40 + 20 * j}k" for j in range(loads))
    return (
        f'[campaign]\nname = "{name}"\n[fixed]\npinning = "pin-2cpu"\nrates = "{rates}"\n'
        f'runs = {runs}\nduration = "{duration:g}s"\nsettle = "0s"\npeak_check = false\n'
        f"[factors]\nsut_cap = [{caps}]\n"
    )


def _flags(settings: dict[str, Any]) -> list[str]:
    """The flags of the ``netassay sweep`` a sweep cell of ``settings`` runs as."""
    out: list[str] = []
    ps = campaign_spec.params("sweep")
    for key, value in settings.items():
        p = ps[key]
        if p.cli is bool:
            out += [p.flag] if bool(value) != p.negate else []
        elif isinstance(value, list):
            out += [p.flag, ",".join(str(x) for x in value)]
        else:
            out += [p.flag, str(value)]
    return out


def _netassay(*args: str) -> float:
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "netassay", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - t0


def campaign(work: Path, text: str, testbed: str) -> dict[str, Any]:
    spec, db = work / "c.toml", work / f"c-{secrets.token_hex(3)}.db"
    spec.write_text(text)
    wall = _netassay("campaign", "run", str(spec), "--db", str(db), "--name", testbed)
    with Store(db, readonly=True) as st:
        cells = [e.metadata["campaign"]["cell_wall_s"] for e in st.experiments()]
        trials = st.count_trials()
    return {
        "wall_s": wall,
        "cells": len(cells),
        "cells_wall_s": sum(cells),
        "trials": trials,
        "overhead_s": wall - sum(cells),
    }


def one_by_one(work: Path, text: str, testbed: str) -> dict[str, Any]:
    c = campaign_spec.parse(text)
    db = work / f"s-{secrets.token_hex(3)}.db"
    walls = [
        _netassay("sweep", "--db", str(db), "--name", testbed, *_flags(c.settings(i)))
        for i in range(len(c.cells))
    ]
    with Store(db, readonly=True) as st:
        trials = st.count_trials()
    return {"wall_s": sum(walls), "cells": len(walls), "trials": trials}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cells", type=int, default=4)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=1.0, help="trial length (s)")
    a = ap.parse_args()
    text = _file("bench", a.cells, a.loads, a.runs, a.duration)
    testbed = "bc" + secrets.token_hex(2)
    work = Path(tempfile.mkdtemp(prefix="netassay-bench-campaign-"))
    rounds = []
    try:
        for r in range(a.rounds):
            order = ("campaign", "one_by_one") if r % 2 == 0 else ("one_by_one", "campaign")
            got = {}
            for mode in order:
                fn = campaign if mode == "campaign" else one_by_one
                got[mode] = fn(work, text, testbed)
            got["order"] = list(order)
            rounds.append(got)
            print(
                f"round {r + 1}: campaign {got['campaign']['wall_s']:.1f} s, one by one "
                f"{got['one_by_one']['wall_s']:.1f} s",
                file=sys.stderr,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_cell = [g["campaign"]["overhead_s"] / g["campaign"]["cells"] for g in rounds]
    share = [g["campaign"]["overhead_s"] / g["campaign"]["wall_s"] for g in rounds]
    ratio = [g["campaign"]["wall_s"] / g["one_by_one"]["wall_s"] for g in rounds]
    # a cell's child process against the same 'netassay sweep' run alone
    cell_ratio = [g["campaign"]["cells_wall_s"] / g["one_by_one"]["wall_s"] for g in rounds]
    overhead = [g["campaign"]["overhead_s"] for g in rounds]
    result = {
        "benchmark": "campaign",
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"machine": platform.machine(), "python": platform.python_version()},
        "setup": {
            "cells": a.cells,
            "loads": a.loads,
            "runs": a.runs,
            "duration_s": a.duration,
            "rounds": a.rounds,
            "file": text,
        },
        "rounds": rounds,
        "overhead_s_median": round(statistics.median(overhead), 3),
        "overhead_per_cell_s_median": round(statistics.median(per_cell), 3),
        "cells_wall_over_one_by_one_median": round(statistics.median(cell_ratio), 4),
        "overhead_share_of_campaign_wall_median": round(statistics.median(share), 4),
        "wall_ratio_campaign_over_one_by_one_median": round(statistics.median(ratio), 4),
        "target_share": 0.02,
        "meets_target": statistics.median(share) < 0.02,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text_out = json.dumps(result, indent=2)
    OUT.write_text(text_out + "\n")
    OUT.with_name(f"campaign-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json").write_text(
        text_out + "\n"
    )
    print(text_out)


if __name__ == "__main__":
    main()
