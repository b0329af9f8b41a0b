"""Testbed state files: atomic writes, torn files never block a teardown or a cleanup, and
the persistent mark (no root needed: the run directory is a temporary one and every
command that would touch the kernel is recorded instead)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from netassay.config import TestbedConfig
from netassay.errors import TestbedError
from netassay.testbed import bed, state, topology

NS = ["na-lab-tg", "na-lab-sut", "na-lab-sink"]


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    d = tmp_path / "run"
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(d))
    return d


@pytest.fixture
def fake_sysctl(tmp_path, monkeypatch):
    """/proc/sys replaced by files in a temporary directory."""
    root = tmp_path / "proc-sys"

    def file_of(key):
        p = root / key.replace(".", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    monkeypatch.setattr(state, "_sysctl_file", file_of)
    file_of("net.core.netdev_max_backlog").write_text("1000\n")
    return file_of


@pytest.fixture
def fake_host(monkeypatch):
    """Namespaces that exist (a mutable list) and the commands run, instead of the kernel."""
    present = list(NS)
    ran: list[list[str]] = []

    def run(argv, **kw):
        ran.append(list(argv))
        if argv[:3] == ["ip", "netns", "del"] and argv[3] in present:
            present.remove(argv[3])
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(topology, "run", run)
    monkeypatch.setattr(topology, "list_netns", lambda: list(present))
    return present, ran


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- atomic writes -----------------------------------------------------------------------
def test_state_write_is_atomic(run_dir, monkeypatch):
    state.write_state("lab", {"name": "lab", "v": 1})

    def crash(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(state.os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        state.write_state("lab", {"name": "lab", "v": 2})
    assert state.read_state("lab") == {"name": "lab", "v": 1}  # the old file, whole
    assert sorted(p.name for p in run_dir.iterdir()) == ["lab.json"]  # no temporary left


def test_saved_sysctls_are_written_atomically(run_dir, fake_sysctl, monkeypatch):
    replaced = []
    real_replace = os.replace

    def spy(src, dst):
        replaced.append((os.path.dirname(src), os.fspath(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(state.os, "replace", spy)
    state.set_global_sysctl("net.core.netdev_max_backlog", "10000")
    saved = run_dir / "sysctl.json"
    assert replaced == [(str(run_dir), str(saved))]  # a temporary in the same directory
    assert json.loads(saved.read_text()) == {"net.core.netdev_max_backlog": "1000"}
    assert fake_sysctl("net.core.netdev_max_backlog").read_text() == "10000\n"
    state.set_global_sysctl("net.core.netdev_max_backlog", "20000")  # the original is kept
    assert state.saved_sysctls() == {"net.core.netdev_max_backlog": "1000"}
    assert state.restore_global_sysctls() == {"net.core.netdev_max_backlog": "1000"}
    assert fake_sysctl("net.core.netdev_max_backlog").read_text() == "1000\n"
    assert not saved.exists()


def test_the_last_teardown_restores_under_the_builds_lock(run_dir, fake_sysctl):
    """A teardown's restore and a build's setting exclude each other: else a build could
    set a value between the restore reading the record and removing it, and the value
    would stay with its original lost (seen with two processes at once)."""
    import threading

    state.set_global_sysctl("net.core.netdev_max_backlog", "10000")
    restored = threading.Event()

    def teardown_elsewhere():
        state.restore_if_last()
        restored.set()

    with state.sysctl_lock():  # a build setting its globals holds this
        t = threading.Thread(target=teardown_elsewhere)
        t.start()
        assert not restored.wait(0.3)  # it waits for the build
        assert fake_sysctl("net.core.netdev_max_backlog").read_text() == "10000\n"
    t.join(timeout=5)
    assert restored.is_set()
    assert fake_sysctl("net.core.netdev_max_backlog").read_text() == "1000\n"
    state.write_state("lab", {"name": "lab", "namespaces": {}})  # a testbed left: no restore
    state.set_global_sysctl("net.core.netdev_max_backlog", "10000")
    assert state.restore_if_last() == {}
    assert fake_sysctl("net.core.netdev_max_backlog").read_text() == "10000\n"


def test_torn_sysctl_record_is_refused_when_setting(run_dir, fake_sysctl):
    run_dir.mkdir()
    (run_dir / "sysctl.json").write_text('{"net.core.netdev_max_b')
    with pytest.raises(TestbedError, match="cannot read the saved sysctls") as err:
        state.set_global_sysctl("net.core.netdev_max_backlog", "10000")
    assert "cleanup" in err.value.line()
    assert fake_sysctl("net.core.netdev_max_backlog").read_text() == "1000\n"  # untouched


# -- torn files never block teardown or cleanup -----------------------------------------
def test_teardown_survives_torn_state_and_sysctl_files(run_dir, fake_sysctl, fake_host, caplog):
    present, _ = fake_host
    run_dir.mkdir()
    (run_dir / "lab.json").write_text('{"name": "lab", "namesp')
    (run_dir / "sysctl.json").write_text("\x00\x00\x00")
    with caplog.at_level(logging.WARNING, logger="netassay.testbed"):
        removed = topology.teardown("lab")
    assert removed == NS and present == []
    assert not (run_dir / "lab.json").exists()
    assert not (run_dir / "sysctl.json").exists()
    text = caplog.text
    assert "lab.json was unreadable" in text
    assert "sysctl.json" in text and "set them by hand" in text


def test_cleanup_of_a_testbed_with_an_unreadable_state(run_dir, fake_sysctl, fake_host, caplog):
    present, _ = fake_host
    present.append("na-other-tg")
    run_dir.mkdir()
    (run_dir / "lab.json").write_text("{not json")
    state.write_state("other", {"name": "other"})
    with caplog.at_level(logging.WARNING, logger="netassay.testbed"):
        removed = topology.cleanup({"lab"})
    assert removed == NS
    assert present == ["na-other-tg"]  # another testbed is left alone
    assert not (run_dir / "lab.json").exists()
    assert state.known_testbeds() == ["other"]
    assert "lab.json was unreadable" in caplog.text


def test_cleanup_everything_with_unreadable_files(run_dir, fake_sysctl, fake_host, caplog):
    present, _ = fake_host
    run_dir.mkdir()
    (run_dir / "lab.json").write_text("")
    (run_dir / "sysctl.json").write_text("[1, 2")
    with caplog.at_level(logging.WARNING, logger="netassay.testbed"):
        topology.cleanup()
    assert present == []
    assert sorted(p.name for p in run_dir.iterdir() if p.suffix == ".json") == []


def test_saved_sysctls_for_show_tolerate_a_torn_record(run_dir, caplog):
    run_dir.mkdir()
    (run_dir / "sysctl.json").write_text("{")
    with caplog.at_level(logging.WARNING, logger="netassay.testbed"):
        assert state.saved_sysctls() == {}
    assert "cannot read the saved sysctls" in caplog.text


# -- the persistent mark -----------------------------------------------------------------
def test_a_build_starts_not_persistent(run_dir, fake_host, monkeypatch):
    """A crash during build leaves a state that says persistent false."""
    present, _ = fake_host
    present.clear()

    def crash(name, cfg):
        raise RuntimeError("crashed while building")

    monkeypatch.setattr(topology, "_links", crash)
    with pytest.raises(RuntimeError):
        topology.build("lab", TestbedConfig(pinning="unpinned"))
    st = state.read_state("lab")
    assert st["persistent"] is False
    assert st["pid"] == os.getpid()


def test_orphaned_without_the_mark_is_not_persistent():
    dead = _dead_pid()
    assert bed.orphaned({"pid": dead})  # a build that crashed before the mark
    assert bed.orphaned({"pid": dead, "persistent": False})
    assert not bed.orphaned({"pid": dead, "persistent": True})
    assert not bed.orphaned({"pid": os.getpid(), "persistent": False})  # still running


# -- global sysctls held by another testbed --------------------------------------------
BACKLOG = "net.core.netdev_max_backlog"


def _up(name, sysctls):
    state.write_state(
        name,
        {"name": name, "namespaces": {"tg": f"na-{name}-tg"}, "sysctls": sysctls},
    )


def test_a_conflicting_global_is_refused_naming_both(run_dir):
    _up("a", {BACKLOG: "1000"})
    with pytest.raises(TestbedError) as err:
        state.refuse_sysctl_conflicts("b", {BACKLOG: "10000"}, ["na-a-tg"])
    line = err.value.line()
    assert err.value.exit_code == 5
    assert "'b'" in line and "'a'" in line and "=10000" in line and "at 1000" in line
    assert "\n" not in line


def test_same_value_no_claim_or_not_up_is_allowed(run_dir):
    _up("a", {BACKLOG: "1000"})
    _up("c", {})
    state.refuse_sysctl_conflicts("b", {BACKLOG: "1000"}, ["na-a-tg", "na-c-tg"])  # same value
    state.refuse_sysctl_conflicts("b", {}, ["na-a-tg"])  # needs no global
    state.refuse_sysctl_conflicts("b", {BACKLOG: "10000"}, [])  # 'a' is not up
    state.refuse_sysctl_conflicts("a", {BACKLOG: "10000"}, ["na-a-tg"])  # its own record


def test_an_unreadable_other_state_is_skipped_with_a_warning(run_dir, caplog):
    run_dir.mkdir()
    (run_dir / "a.json").write_text("{torn")
    with caplog.at_level(logging.WARNING, logger="netassay.testbed"):
        state.refuse_sysctl_conflicts("b", {BACKLOG: "10000"}, ["na-a-tg"])
    assert "its sysctls are not known" in caplog.text


def test_build_refuses_a_conflict_before_setting_it(run_dir, fake_sysctl, fake_host, monkeypatch):
    """The check is made again under the lock where build sets the sysctl."""
    present, _ = fake_host
    present[:] = ["na-a-tg"]
    _up("a", {BACKLOG: "1000"})
    monkeypatch.setattr(topology, "_links", lambda name, cfg: {})
    monkeypatch.setattr(topology, "_router", lambda name, cfg, macs: None)
    with pytest.raises(TestbedError, match="testbed 'a' is up and holds it at 1000"):
        topology.build("b", TestbedConfig(pinning="unpinned", backlog=10000))
    assert fake_sysctl(BACKLOG).read_text() == "1000\n"
    assert not (run_dir / "sysctl.json").exists()


def test_global_sysctls_of_a_config():
    assert TestbedConfig().global_sysctls() == {}
    assert TestbedConfig(backlog=10000).global_sysctls() == {BACKLOG: "10000"}
