"""Benchmark: ``netassay report`` of a store of 114 PASTRAMI experiments, cold, warm and
grown, for this tree and a baseline checkout side by side.

The store: the 8 public PASTRAMI files (``$NETASSAY_DATA/pastrami``, the tests' one
setting for the real data; without it the six curves of ``tests/data/pastrami``)
replicated to ``--experiments`` files (114 by default, the authors' study), as three
sites measuring the same set-ups again and again: copy ``i`` is
``c<i>/s<i mod 3>_<name>``, so that the copies of one file at one site are one
configuration, a series the report draws a trend page of (with the 8 real files: 21
series of 4 to 10 points; the two bare-metal files that differ only in their kernel are
one configuration). The
importer skips a file whose content is already stored, so each copy differs: one trial
of its first load received one frame fewer (one frame in millions: the figures look
the same).

Then, for this tree and for ``--baseline`` (the ``src`` folder of another checkout,
e.g. ``git worktree add --detach ../base-main main``), the real command, as a user runs
it, on copies of one store (this tree's import; a baseline whose ``db check`` refuses
it, an older schema, imports its own: its experiments then have other times, which
its trend figures show):

- cold: an empty ``--out``, every figure drawn;
- warm: the same report again, nothing changed (``--warm`` runs after each cold one);
- grown: ``--grow`` more experiments imported (copies that join existing series), the
  report again over a copy of the warm folder: their curves and the trends they join
  drawn, the rest kept.

The modes run interleaved, this tree then the baseline, ``--repeat`` rounds: the
machine is shared, and what else runs falls on both alike. Each run: wall seconds,
CPU seconds (the command's and its workers', user and system: the work done, whatever
else shares the machine), figure files and, as the tree's progress line counts them,
the figures and those drawn (``progress_*``: the baseline's line counted only the
curves).
Medians are reported with every run. ``--one-cpu`` adds a cold run of this tree on
one CPU (``taskset``).

Pixels: this tree's curves are compared with matplotlib's own way of drawing them
(``plain``: this tree's figure code in one process, without the shared text caches and
with every minor tick an object); and every PNG of this tree's report with the
baseline's of the same name, and the figure each trend page holds inline with the
baseline's page of the same name.

Run: ``.venv/bin/python bench/report.py --baseline ../base-main/src``. Writes
bench/results/report.json and prints it.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
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
SITES = 3


def replicate(src: Path, folder: Path, n: int, start: int = 0) -> None:
    """Write copies ``start .. start+n-1`` of the files under ``src``: copy ``i`` as
    ``c<i>/s<i mod SITES>_<name>``, one trial of its first load with one frame fewer."""
    files = sorted(src.rglob("*_raw_*.txt"))
    for i in range(start, start + n):
        f = files[i % len(files)]
        lines = f.read_text().splitlines()
        first = json.loads(lines[0])
        run = first[1 + (i // len(files)) % (len(first) - 1)]  # [sent, received, ...]
        run[1] = max(0, run[1] - 1)
        lines[0] = json.dumps(first)
        copy = folder / f"c{i:03d}" / f"s{i % SITES}_{f.name}"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text("\n".join(lines) + "\n")


def report(src: Path, db: Path, out: Path, *, one_cpu: bool = False) -> dict[str, float]:
    """One ``netassay report`` of ``src``'s code: its wall and CPU time, what it drew."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "netassay", "report", str(db), "--out", str(out)]
    if one_cpu:
        argv = ["taskset", "-c", "0", *argv]
    t0, c0 = time.perf_counter(), _children_cpu()
    cp = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if cp.returncode:
        raise SystemExit(f"report failed: {cp.stderr.strip()[-500:]}")
    said = re.findall(r"figures (\d+)/(\d+) \((\d+) kept\)", cp.stderr)
    run: dict[str, float] = {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "figure_files": sum(1 for p in out.rglob("*") if p.suffix in (".png", ".svg")),
        "index_bytes": (out / "index.html").stat().st_size,
    }
    if said:
        _, total, kept = map(int, said[-1])
        run.update({"progress_figures": total, "progress_drawn": total - kept})
    return run


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished children, their pools' workers too."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


PLAIN = """
import sys
from pathlib import Path
from netassay.config import AnalysisConfig
from netassay.shared.plots import slugify
from netassay.methods.sweep import figures
from netassay.shared.sweep_analyse import assess_store
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


def _differ(x: np.ndarray, y: np.ndarray) -> bool:
    return x.shape != y.shape or bool((x != y).any())


def pixels_apart(a: Path, b: Path) -> dict[str, int]:
    """PNGs of the same relative paths under two folders: how many differ in a pixel."""
    names = sorted(p.relative_to(a) for p in a.rglob("*.png") if (b / p.relative_to(a)).exists())
    differ = sum(
        _differ(np.asarray(Image.open(a / n)), np.asarray(Image.open(b / n))) for n in names
    )
    return {"compared": len(names), "differ": differ}


INLINE = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def inline_apart(a: Path, b: Path) -> dict[str, int]:
    """The PNGs held inline by the pages of the same names under two folders (the trend
    pages): how many differ in a pixel."""
    compared = differ = 0
    for page in sorted(a.rglob("*.html")):
        other = b / page.relative_to(a)
        if not other.exists():
            continue
        pngs = INLINE.findall(page.read_text()), INLINE.findall(other.read_text())
        if len(pngs[0]) != len(pngs[1]):
            compared, differ = compared + 1, differ + 1
            continue
        for x, y in zip(*pngs, strict=True):
            compared += 1
            differ += _differ(_decoded(x), _decoded(y))
    return {"compared": compared, "differ": differ}


def _decoded(b64: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))))


def import_into(db: Path, folder: Path, src: Path) -> float:
    """Import the files with ``src``'s code (a baseline reads only the stores of its own
    schema: it imports its own)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "netassay", "import", "pastrami", str(folder), "--db", str(db)]
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True, timeout=600)
    return round(time.perf_counter() - t0, 2)


def store_for(src: Path, db: Path, copy: Path, folder: Path) -> str:
    """``copy``: a copy of ``db`` when ``src``'s code reads it (its ``db check``), else
    its own import of ``folder``; which of the two."""
    shutil.copy(db, copy)
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "netassay", "db", "check", "--db", str(copy)]
    if subprocess.run(argv, env=env, capture_output=True, timeout=600).returncode == 0:
        return "copy"
    copy.unlink()
    import_into(copy, folder, src)
    return "own import"


def commit_of(src: Path) -> str | None:
    """The commit a tree's checkout is at (``+`` when it has changes), None outside git."""
    git = ["git", "-C", str(src)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode:
        return None
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "."], capture_output=True,
                           text=True).stdout.strip()  # fmt: skip
    return head.stdout.strip() + ("+" if dirty else "")


def median(runs: list[dict[str, float]]) -> dict[str, object]:
    return {
        **{k: runs[-1][k] for k in runs[-1] if k not in ("wall_s", "cpu_s")},
        "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 2),
        "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
        "runs_s": [r["wall_s"] for r in runs],
        "runs_cpu_s": [r["cpu_s"] for r in runs],
    }


def _tree(src: Path, modes: dict[str, list[dict[str, float]]]) -> dict[str, object]:
    return {
        "src": str(src),
        "commit": commit_of(src),
        **{mode: median(runs) for mode, runs in modes.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=114)
    ap.add_argument("--grow", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of every mode")
    ap.add_argument("--warm", type=int, default=3, help="warm runs after each cold one")
    ap.add_argument("--baseline", type=Path, help="another checkout's src folder")
    ap.add_argument("--one-cpu", action="store_true", help="also this tree cold on one CPU")
    args = ap.parse_args()
    trees = {"this": ROOT / "src"}
    if args.baseline is not None:
        if not (args.baseline / "netassay").is_dir():
            raise SystemExit(f"--baseline {args.baseline}: no netassay package in it")
        trees["baseline"] = args.baseline.resolve()
    modes: dict[str, dict[str, list[dict[str, float]]]] = {t: {} for t in trees}
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="na-bench-report-") as tmp:
        t = Path(tmp)
        replicate(DATA, t / "files", args.experiments)
        replicate(DATA, t / "more", args.grow, start=args.experiments)
        import_s = import_into(t / "this.db", t / "files", trees["this"])
        stores = {name: store_for(src, t / "this.db", t / f"{name}.db", t / "files")
                  for name, src in trees.items() if name != "this"}  # fmt: skip
        for _ in range(args.repeat):
            shutil.copy(t / "this.db", t / "grown.db")  # a few more, for every tree alike
            import_into(t / "grown.db", t / "more", trees["this"])
            for name, src in trees.items():
                db, out, got = t / f"{name}.db", t / f"{name}-r", modes[name]
                shutil.rmtree(out, ignore_errors=True)
                got.setdefault("cold", []).append(report(src, db, out))
                for _ in range(args.warm):
                    got.setdefault("warm", []).append(report(src, db, out))
                grown_db, grown = t / f"{name}-grown.db", t / f"{name}-grown"
                if stores.get(name, "copy") == "copy":
                    shutil.copy(t / "grown.db", grown_db)
                else:
                    shutil.copy(db, grown_db)
                    import_into(grown_db, t / "more", src)
                shutil.rmtree(grown, ignore_errors=True)
                shutil.copytree(out, grown)
                got.setdefault("grown", []).append(report(src, grown_db, grown))
            if args.one_cpu:
                one = t / "one-cpu"
                shutil.rmtree(one, ignore_errors=True)
                run = report(trees["this"], t / "this.db", one, one_cpu=True)
                modes["this"].setdefault("cold_one_cpu", []).append(run)
        pixels: dict[str, object] = {}
        plain_run = plain(t / "this.db", t / "plain")
        pixels["curves_vs_plain"] = pixels_apart(t / "this-r" / "figures", t / "plain")
        if "baseline" in trees:
            pixels["pngs_vs_baseline"] = pixels_apart(t / "this-r", t / "baseline-r")
            pixels["inline_vs_baseline"] = inline_apart(t / "this-r", t / "baseline-r")
    result = {
        "experiments": args.experiments,
        "grown_by": args.grow,
        "rounds": args.repeat,
        "warm_runs_per_round": args.warm,
        "cpus": len(os.sched_getaffinity(0)),
        "load_avg_at_start": load_at_start,
        "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
        "import_s": import_s,
        "baseline_store": stores.get("baseline"),
        "files": str(DATA),
        "pixels": pixels,
        "plain_pngs_one_process": plain_run,
        **{name: _tree(src, modes[name]) for name, src in trees.items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
