"""Shared test fixtures: where the real PASTRAMI data lives, a CLI runner, and a real
headless Chromium for the HTML reports."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NETASSAY_SHARED", ROOT.parent / "shared"))
PASTRAMI = SHARED / "data" / "pastrami"

# The commands the tests start see Ctrl-C as a terminal's user would: a suite started in
# the background of a non-interactive shell inherits SIGINT ignored, and an ignored
# signal stays ignored across exec (a handled one is reset to its default there).
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def pastrami_dir() -> Path:
    if not PASTRAMI.is_dir():
        pytest.fail(f"the real PASTRAMI data is missing at {PASTRAMI} (set NETASSAY_SHARED)")
    return PASTRAMI


def netassay_argv(*args: object, user: int | None = None) -> list[str]:
    """``python -m netassay ARGS``; as ``user`` (a uid, through setpriv) when given."""
    argv = [sys.executable, "-m", "netassay", *map(str, args)]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return argv


def run_cli(
    *args: object,
    check: bool = False,
    timeout: float = 300,
    env_extra: dict[str, str] | None = None,
    user: int | None = None,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """Run the real netassay CLI in a child process and capture its output.

    ``env_extra`` adds to the environment, ``user`` runs it unprivileged, ``check``
    fails the test on a non-zero exit; the rest goes to ``subprocess.run``."""
    env = {**os.environ, **env_extra} if env_extra else kw.pop("env", None)
    cp = subprocess.run(
        netassay_argv(*args, user=user),
        capture_output=True, text=True, timeout=timeout, env=env, **kw,
    )  # fmt: skip
    if check and cp.returncode != 0:
        raise AssertionError(f"netassay {' '.join(map(str, args))} failed:\n{cp.stderr}")
    return cp


def refused_cleanly(res: subprocess.CompletedProcess[str], needle: str, where: Path) -> None:
    """A command that refused its input: exit 2, one line saying ``needle``, no
    traceback, nothing on stdout, nothing left in the run directory ``where/run`` nor a
    store ``where/netassay.db``."""
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert needle in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not (where / "run").exists() or not any((where / "run").iterdir())
    assert not (where / "netassay.db").exists()


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process still running, newest first; SIGKILL one that lingers 20 s."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture
def cli():
    """The one way tests run netassay's command line (see ``run_cli``)."""
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
