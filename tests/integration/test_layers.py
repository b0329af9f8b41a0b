"""The layer contract in pyproject.toml holds, and it is not a contract that cannot fail:
one import running upward in a copy of the package breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import netassay

REPO = Path(__file__).resolve().parents[2]
SRC = Path(netassay.__file__).resolve().parent
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(src_root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` as ``make lint`` runs it (the contract read from pyproject.toml
    in the folder it runs in), on the package under ``src_root``."""
    if src_root != SRC.parent:
        shutil.copy(REPO / "pyproject.toml", src_root / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(src_root)}
    return subprocess.run(
        [str(LINT), "--no-cache"], capture_output=True, text=True, env=env,
        cwd=REPO if src_root == SRC.parent else src_root, timeout=120,
    )  # fmt: skip


def test_layers_kept() -> None:
    res = _lint(SRC.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "KEPT" in res.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "netassay"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    units = copy / "units.py"  # a foundation module
    units.write_text(units.read_text() + "\nimport netassay.store.db  # noqa\n")
    res = _lint(tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "BROKEN" in res.stdout
    assert "netassay.units -> netassay.store.db" in res.stdout


HEAVY = (
    "MLRsearch",
    "scipy",
    "matplotlib",
    "distributed",
    "pyroute2",
    "playwright",
    "cryptography",
    "pyarrow",
)


def test_the_cli_starts_without_its_heavy_dependencies() -> None:
    """Every command pays for ``import netassay.cli``; what only some commands need
    (MLRsearch, scipy, matplotlib, Dask, pyroute2, the browser, pyarrow) is deferred to them."""
    code = f"import sys, netassay.cli\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
