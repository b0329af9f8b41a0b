"""Shared test fixtures: the PASTRAMI and MonIPE files (the ones shipped in tests/data,
and the real ones others measured, where they are), a CLI runner, and a real headless
Chromium for the HTML reports."""

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
FIXTURES = ROOT / "tests" / "data"  # small files netassay's tests make or ship themselves

# The real measurements others published, for the few tests that check netassay against
# them: one setting, NETASSAY_DATA, a folder holding pastrami/ and monipe/ (the layout
# in docs/development.md). Unset, the project's own machines keep them beside the
# checkout; a clone with nothing beside it skips those tests, each with one line.
_BESIDE = ROOT.parent / "shared" / "data"
DATA: Path | None = (
    Path(os.environ["NETASSAY_DATA"])
    if os.environ.get("NETASSAY_DATA")
    else (_BESIDE if _BESIDE.is_dir() else None)
)
PUBLIC = {
    "pastrami": "PASTRAMI's raw result files, published with the paper in "
    "github.com/netgroup/pastrami (misure.zip)",
    "monipe": "a MonIPE round, published in github.com/jpmsb/teste-automatizado-rnp "
    "(resultados-exemplo/)",
}


def real_data(name: str) -> Path:
    """NETASSAY_DATA/<name>, or skip the test with one line saying where the data lives."""
    where = None if DATA is None else DATA / name
    if where is None or not where.is_dir():
        pytest.skip(
            f"the real {name} data is not here: set NETASSAY_DATA to a folder holding "
            f"{name}/ ({PUBLIC[name]}; docs/development.md lists the files)"
        )
    return where


@pytest.fixture(scope="session")
def pastrami_real() -> Path:
    """The eight real PASTRAMI files (skipped without them)."""
    return real_data("pastrami")


@pytest.fixture(scope="session")
def monipe_real() -> Path:
    """The real MonIPE round (skipped without it)."""
    return real_data("monipe")


@pytest.fixture(scope="session")
def pastrami_files() -> Path:
    """Six PASTRAMI-format curves made by hand (tests/data/pastrami/README.md)."""
    return FIXTURES / "pastrami"


@pytest.fixture(scope="session")
def monipe_files() -> Path:
    """A MonIPE round written by hand (tests/data/monipe/README.md)."""
    return FIXTURES / "monipe"


@pytest.fixture(scope="session")
def pastrami_dir() -> Path:
    """The real PASTRAMI files where they are (114 experiments: imports long enough to
    overlap), else the ones shipped in tests/data (a clone runs these tests too)."""
    real = DATA / "pastrami" if DATA is not None else None
    return real if real is not None and real.is_dir() else FIXTURES / "pastrami"


def pastrami_third(pastrami_dir: Path) -> Path:
    """A subset of the files neither 'vm' nor 'bare-metal'."""
    return pastrami_dir / ("mazinga" if (pastrami_dir / "mazinga").is_dir() else "ns")


# The commands the tests start see Ctrl-C as a terminal's user would: a suite started in
# the background of a non-interactive shell inherits SIGINT ignored, and an ignored
# signal stays ignored across exec (a handled one is reset to its default there).
signal.signal(signal.SIGINT, signal.default_int_handler)


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
