"""Shared test fixtures: where the real PASTRAMI data lives, a CLI runner, and a real
headless Chromium for the HTML reports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright (one for the whole session)."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: 'make setup' installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
