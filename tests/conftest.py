"""Shared test fixtures: where the real PASTRAMI data lives, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NETASSAY_SHARED", ROOT.parent / "shared"))
PASTRAMI = SHARED / "data" / "pastrami"


@pytest.fixture(scope="session")
def pastrami_dir() -> Path:
    if not PASTRAMI.is_dir():
        pytest.fail(f"the real PASTRAMI data is missing at {PASTRAMI} (set NETASSAY_SHARED)")
    return PASTRAMI


def run_cli(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real netassay CLI in a child process."""
    cp = subprocess.run(
        [sys.executable, "-m", "netassay", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and cp.returncode != 0:
        raise AssertionError(f"netassay {' '.join(map(str, args))} failed:\n{cp.stderr}")
    return cp


@pytest.fixture
def cli():
    return run_cli
