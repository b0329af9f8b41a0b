"""The lab CLI refuses bad input with one clear line, a non-zero exit, and no change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from tests.conftest import run_cli as cli

from netassay.names import PREFIX


def netns_names():
    """netassay's namespaces but those of a system test session running beside (na-sy*)."""
    if shutil.which("ip") is None:
        return set()
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = {line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)}
    return {n for n in names if not n.startswith(f"{PREFIX}sy")}


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    d = tmp_path / "run"
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(d))
    return d


def one_line_error(res, code):
    assert res.returncode == code, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("netassay: ")
    assert "Traceback" not in res.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["sweep", "--rates", "50k:x:50k", "--dry-run"], 2, "bad rate"),
        (["sweep", "--rates", "50k:600k", "--dry-run"], 2, "three parts"),
        (["sweep", "--rates", "300k,200k", "--dry-run"], 2, "increase"),
        (["sweep", "--duration", "0", "--dry-run"], 2, "duration"),
        (["sweep", "--duration=-2s", "--dry-run"], 2, "duration"),
        (["sweep", "--runs", "0", "--dry-run"], 2, "--runs"),
        (["sweep", "--pinning", "pin-9cpu", "--dry-run"], 2, "unknown pinning"),
        (["testbed", "up", "--pinning", "pin-9cpu"], 2, "unknown pinning"),
        (["testbed", "up", "--name", "a;rm -rf /"], 2, "bad testbed name"),
        (["testbed", "up", "--name", "$(reboot)"], 2, "bad testbed name"),
        (["testbed", "down", "--name", "../../etc"], 2, "bad testbed name"),
        (["sweep", "--name", "x|y", "--dry-run"], 2, "bad testbed name"),
        (["testbed", "up", "--sut", "switch"], 2, "unknown SUT"),
        (["testbed", "up", "--sut-drop", "1.5"], 2, "--sut-drop"),
        (["testbed", "up", "--sut-cap", "fast"], 2, "bad rate"),
        (["testbed", "up", "--ip", "6", "--size", "64"], 2, "frame size"),
        (["testbed", "show", "--name", "nosuch"], 5, "no testbed named"),
    ],
)
def test_bad_input_one_line_no_change(args, code, needle, run_dir):
    before = netns_names()
    res = cli(*args)
    line = one_line_error(res, code)
    assert needle in line
    # nothing built: no namespace of the testbed these commands name ('lab', the
    # default; the others are refused names); another run's testbeds may come and go
    assert not {n for n in netns_names() - before if n.startswith("na-lab-")}
    assert not run_dir.exists() or not any(run_dir.glob("*.json"))


def test_resume_without_db(tmp_path, run_dir):
    line = one_line_error(cli("sweep", "--resume"), 2)
    assert "--resume needs --db" in line
    missing = tmp_path / "none.db"
    line = one_line_error(cli("sweep", "--resume", "--db", str(missing)), 4)
    assert "no such database" in line
    assert not missing.exists()


def test_resume_with_nothing_to_resume(tmp_path, run_dir):
    from netassay.store.db import Store

    db = tmp_path / "lab.db"
    with Store(db):
        pass
    line = one_line_error(cli("sweep", "--resume", "--db", str(db)), 2)
    assert "nothing to resume" in line


def test_dry_run_prints_plan_and_duration(tmp_path, run_dir):
    db = tmp_path / "lab.db"
    res = cli(
        "sweep", "--rates", "50k:600k:50k", "--runs", "10", "--duration", "2s",
        "--db", str(db), "--dry-run", "--pinning", "pin-2cpu",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "loads (12): 50 kpps, 100 kpps" in res.stdout
    assert "trials: 120 planned, 120 to run" in res.stdout
    assert "estimated time: 6 min 36 s" in res.stdout
    assert "pinning=pin-2cpu" in res.stdout
    assert not db.exists()


def test_no_root_is_one_line_and_exit_6(run_dir, tmp_path):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (to drop to an unprivileged user) and setpriv")
    probe = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", "1"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("the unprivileged user cannot run this Python")
    before = netns_names()
    here = tmp_path / "here"  # a folder the user may write: sweep's store (netassay.db) is fine
    here.mkdir(mode=0o777)
    here.chmod(0o777)
    for args in (["testbed", "up", "--name", "nr"], ["testbed", "cleanup"], ["sweep"]):
        line = one_line_error(cli(*args, user=65534, cwd=here), 6)
        assert "needs root" in line and "sudo" in line
    assert netns_names() == before


@pytest.mark.parametrize("command", [["sweep", "--rates", "10k,20k"], ["search"]])
def test_ipv6_takes_the_smallest_ipv6_frame_by_default(command, run_dir):
    """--ip 6 without --size: 84-byte frames (IPv6's smallest), not a refused 64."""
    res = cli(*command, "--ip", "6", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "ip_version=6, size_bytes=84" in res.stdout
    line = one_line_error(cli(*command, "--ip", "6", "--size", "64", "--dry-run"), 2)
    assert "84..1518" in line and "--size 84" in line


@pytest.mark.parametrize(
    ("args", "flags"),
    [(["sweep", "--rates", "10k"], "--rates"), (["sweep", "--runs", "3", "--label", "x"],
     "--runs, --label"), (["search", "--label", "x"], "--label")],
)  # fmt: skip
def test_resume_refuses_flags_it_cannot_honour(tmp_path, run_dir, args, flags):
    """A resume continues the stored plan: a flag that would change it is refused, not
    ignored (it was ignored silently)."""
    from netassay.store.db import Store

    db = tmp_path / "lab.db"
    with Store(db):
        pass
    line = one_line_error(cli(*args, "--resume", "--db", str(db)), 2)
    assert f"--resume takes no {flags}" in line
