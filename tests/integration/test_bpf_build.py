"""The BPF programs build from their sources with clang as 'make setup' builds them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "bpf" / "xdp_router.c"


def test_program_builds_from_source(tmp_path):
    if shutil.which("clang") is None:
        pytest.fail("clang is missing: 'make setup' installs it")
    include = subprocess.run(["cc", "-dumpmachine"], capture_output=True, text=True)
    triplet = include.stdout.strip() or "x86_64-linux-gnu"
    out = tmp_path / "xdp_router.o"
    res = subprocess.run(
        ["clang", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf",
         f"-I/usr/include/{triplet}", "-c", str(SOURCE), "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"
