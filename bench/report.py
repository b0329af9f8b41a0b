"""Benchmark: ``netassay report`` of a store of 114 PASTRAMI experiments, cold and warm.

The store: the 8 public PASTRAMI files (``$NETASSAY_DATA/pastrami``, the tests' one
setting for the real data; without it the six curves of ``tests/data/pastrami``) replicated to
``--experiments`` files (114 by default, the authors' study). The importer skips a file
whose content is already stored, so each copy differs: the copy's index is folded into
its file name (hence its label) and one trial of its first load received one frame
fewer (one frame in millions: the figures look the same). Then, side
by side in one run, the real command on that store:

- the one-process renderer: ``netassay report`` of the code in ``--baseline`` (a
  checkout of ada2172, where the issue measured it: every figure drawn in one process,
  laid out at each savefig, inlined in index.html), when that folder exists; it imports
  its own store (it reads only its own schema);
- this tree, cold (an empty ``--out``), on the host's CPUs and on one CPU (``taskset``);
- this tree, warm: the same report again, nothing changed (every figure kept);
- this tree, grown: ``--grow`` more experiments imported, the report again (only theirs
  drawn).

For each: wall seconds, CPU seconds (the command's and its workers', user and system:
the work done, whatever else shares the machine), figure files, index.html's size. The
PNGs of this tree are compared pixel by pixel with matplotlib's own way of drawing them
(``plain``: this tree's figure code in one process, without the shared text caches and
with every minor tick an object): same content, same look. (The baseline's PNGs differ
where its analysis did: it counted negative loss, which this tree leaves out.) The
machine is shared: each mode runs once per ``--repeat`` round, interleaved; medians
are reported with every run. Run: ``.venv/bin/python bench/report.py --baseline
/path/to/ada2172/src``. Writes bench/results/report.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.conftest import DATA as REAL  # noqa: E402  # NETASSAY_DATA
from tests.conftest import FIXTURES  # noqa: E402

DATA = (
    REAL / "pastrami"
    if REAL is not None and (REAL / "pastrami").is_dir()
    else FIXTURES / "pastrami"
)
OUT = ROOT / "bench" / "results" / "report.json"


def replicate(src: Path, folder: Path, n: int, start: int = 0) -> None:
    """Write copies ``start .. start+n-1`` of the files under ``src``: each named
    ``r<index>_<name>``, one trial of its first load with one frame fewer received."""
    files = sorted(src.rglob("*_raw_*.txt"))
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        f = files[i % len(files)]
        lines = f.read_text().splitlines()
        first = json.loads(lines[0])
        run = first[1 + (i // len(files)) % (len(first) - 1)]  # [sent, received, ...]
        run[1] = max(0, run[1] - 1)
        lines[0] = json.dumps(first)
        (folder / f"r{i:03d}_{f.name}").write_text("\n".join(lines) + "\n")


def report(src: Path, db: Path, out: Path, *, one_cpu: bool = False) -> dict[str, float]:
    """One ``netassay report`` of ``src``'s code: its wall time and what it wrote."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "netassay", "report", str(db), "--out", str(out)]
    if one_cpu:
        argv = ["taskset", "-c", "0", *argv]
    t0, c0 = time.perf_counter(), _children_cpu()
    cp = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if cp.returncode:
        raise SystemExit(f"report failed: {cp.stderr.strip()[-500:]}")
    figures = out / "figures"
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "figure_files": sum(1 for p in figures.iterdir() if p.suffix in (".png", ".svg")),
        "index_bytes": (out / "index.html").stat().st_size,
    }


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished children, their pools' workers too."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


PLAIN = """
import sys
from pathlib import Path
from netassay.config import AnalysisConfig
from netassay.methods.plots import slugify
from netassay.methods.sweep import figures
from netassay.methods.sweep.analyse import assess_store
from netassay.store.paths import open_store
figures._minor_ticks_as_one_line = lambda ax: None  # the log axis's own minor ticks
out, used = Path(sys.argv[2]), set()
out.mkdir(parents=True, exist_ok=True)
with open_store(Path(sys.argv[1])) as store:
    for a in assess_store(store, AnalysisConfig()):
        figures.plot_assessment(a, out / slugify(a.label, used), formats=("png",))
"""


def plain(db: Path, out: Path) -> dict[str, float]:
    """This tree's figures drawn as matplotlib draws them unaided, in one process: no
    shared text caches, every minor tick an object (the pixels' reference)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t0, c0 = time.perf_counter(), _children_cpu()
    argv = [sys.executable, "-c", PLAIN, str(db), str(out)]
    subprocess.run(argv, env=env, check=True, capture_output=True, timeout=3600)
    return {
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(_children_cpu() - c0, 2),
        "figure_files": sum(1 for _ in out.glob("*.png")),
    }


def pixels_apart(a: Path, b: Path) -> dict[str, int]:
    """PNGs of the same names in two figure folders: how many differ in any pixel."""
    names = sorted(p.name for p in a.glob("*.png"))
    differ = 0
    for name in names:
        x = np.asarray(Image.open(a / name))
        y = np.asarray(Image.open(b / name))
        differ += int(x.shape != y.shape or bool((x != y).any()))
    return {"compared": len(names), "differ": differ}


def import_into(db: Path, folder: Path, src: Path = ROOT / "src") -> float:
    """Import the files with ``src``'s code (a baseline reads only the stores of its own
    schema: it imports its own)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "netassay", "import", "pastrami", str(folder), "--db", str(db)]
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True, timeout=600)
    return round(time.perf_counter() - t0, 2)


def median(runs: list[dict[str, float]]) -> dict[str, object]:
    return {
        **{k: runs[-1][k] for k in runs[-1] if k not in ("wall_s", "cpu_s")},
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "runs_s": [r["wall_s"] for r in runs],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=114)
    ap.add_argument("--grow", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--baseline", type=Path, default=ROOT.parent / "base-ada" / "src")
    args = ap.parse_args()
    modes: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="na-bench-report-") as tmp:
        t = Path(tmp)
        replicate(DATA, t / "files", args.experiments)
        db = t / "p.db"
        import_s = import_into(db, t / "files")
        base_db = t / "base.db"
        if args.baseline.is_dir():
            import_into(base_db, t / "files", args.baseline)
        for _ in range(args.repeat):
            if args.baseline.is_dir():
                shutil.rmtree(t / "base", ignore_errors=True)
                modes.setdefault("one_process_baseline_cold", []).append(
                    report(args.baseline, base_db, t / "base")
                )
            for name, one_cpu in (("cold_one_cpu", True), ("cold", False)):
                shutil.rmtree(t / "r", ignore_errors=True)
                run = report(ROOT / "src", db, t / "r", one_cpu=one_cpu)
                modes.setdefault(name, []).append(run)
            modes.setdefault("warm", []).append(report(ROOT / "src", db, t / "r"))
        modes["plain_pngs_one_process"] = [plain(db, t / "plain")]
        same = pixels_apart(t / "r" / "figures", t / "plain")
        replicate(DATA, t / "more", args.grow, start=args.experiments)
        import_into(db, t / "more")
        modes["grown"] = [report(ROOT / "src", db, t / "r")]
    result = {
        "experiments": args.experiments,
        "grown_by": args.grow,
        "cpus": len(os.sched_getaffinity(0)),
        "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
        "import_s": import_s,
        "baseline": str(args.baseline),
        "files": str(DATA),
        "png_pixels_vs_plain": same,
        **{name: median(runs) for name, runs in modes.items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
