"""The store under real runs (root): the device holding it fills during an import and
during a sweep (a small tmpfs under the store, a ballast file taking the rest): one line
that says how much is stored and how to go on, nothing lost, the same import (or the
sweep's --resume) on a freed disk finishing exactly once, the testbed removed; and ten
writers of mixed kinds at once on one store (imports, two sweeps and a doctor on their
own testbeds, db migrate) leaving what a serial run of the same commands leaves."""

from __future__ import annotations

import re
import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.conftest import netassay_argv, pastrami_third, stop_all
from tests.integration.conftest import _old_store
from tests.integration.test_store_concurrency import IPERF3, _counts
from tests.system.conftest import OURS

MiB = 1024 * 1024


@pytest.fixture
def small_disk(tmp_path, lab_env) -> Iterator[Callable[[int, int], tuple[Path, Path]]]:
    """``small_disk(size, free)``: a tmpfs of ``size`` bytes with a ballast file leaving
    ``free`` bytes; (its folder, the ballast). Unmounted after the test."""
    mounts: list[Path] = []

    def make(size: int, free: int) -> tuple[Path, Path]:
        d = tmp_path / f"disk{len(mounts)}"
        d.mkdir()
        opts = f"size={size // 1024}k,mode=0755"
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "na-store", str(d)], check=True)
        mounts.append(d)
        ballast = d / "ballast"
        ballast.write_bytes(b"\0" * (size - free))
        return d, ballast

    yield make
    for d in mounts:
        subprocess.run(["umount", "--lazy", str(d)], check=False)


@pytest.fixture
def names(lab_env) -> Iterator[Callable[[], str]]:
    """Fresh testbed names; their namespaces and state are removed after the test."""
    from netassay.testbed import topology

    made: list[str] = []

    def name() -> str:
        made.append(OURS + secrets.token_hex(3))
        return made[-1]

    yield name
    topology.cleanup(set(made) or {"-"})
    assert not [ns for ns in topology.list_netns() if any(ns.startswith(f"na-{n}-") for n in made)]


def test_a_full_disk_during_an_import_loses_nothing_and_the_same_import_finishes(
    pastrami_real, tmp_path, cli, small_disk
):
    pastrami_dir = pastrami_real  # 114 experiments: more than 600 KB of store
    serial = tmp_path / "serial.db"
    cli("import", "pastrami", pastrami_dir, "--db", serial, check=True)
    total = _counts(serial)["experiments"]
    disk, ballast = small_disk(2 * MiB, 600 * 1024)
    db = disk / "p.db"
    cp = cli("import", "pastrami", pastrami_dir, "--db", db)
    assert cp.returncode == 4, cp.stderr
    [line] = cp.stderr.strip().splitlines()
    m = re.fullmatch(
        rf"netassay: no space left on the device holding {re.escape(str(db))}: (\d+) of "
        rf"{total} experiments stored, nothing lost; free space and run the same command "
        r"again \(it resumes\)",
        line,
    )
    assert m, line
    stored = int(m.group(1))
    assert 0 < stored < total and _counts(db)["experiments"] == stored  # as said
    assert ": ok (" in cli("db", "check", "--db", db, check=True).stdout  # what is stored is sound
    ballast.unlink()  # space freed
    cp = cli("import", "pastrami", pastrami_dir, "--db", db, check=True)
    assert (
        f"imported {total - stored} experiment(s)" in cp.stdout
        and f"{stored} already stored, skipped" in cp.stdout
    ), cp.stdout
    assert _counts(db) == _counts(serial)  # every experiment and trial exactly once
    assert ": ok (" in cli("db", "check", "--db", db, check=True).stdout


RATES, RUNS = "20k,25k,30k,35k,40k,45k,50k,55k,60k,65k", 2
PLANNED = 10 * RUNS


@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_a_full_disk_during_a_sweep_loses_nothing_and_its_resume_finishes_once(
    tb_name, cli, small_disk, netns_of, backlog
):
    before = backlog()
    disk, ballast = small_disk(2 * MiB, 400 * 1024)
    db = disk / "s.db"
    cp = cli("sweep", "--name", tb_name, "--rates", RATES, "--runs", RUNS, "--duration", "0.2s",
             "--settle", "0.05s", "--no-peak-check", "--db", db)  # fmt: skip
    assert cp.returncode == 4, cp.stderr
    said = [ln for ln in cp.stderr.splitlines() if ln.startswith("netassay:")]
    assert len(said) == 1, cp.stderr
    m = re.fullmatch(
        rf"netassay: no space left on the device holding {re.escape(str(db))}: (\d+) of "
        rf"{PLANNED} trials of experiment 1 stored, nothing lost; free space and continue "
        rf"with 'netassay sweep --db {re.escape(str(db))} --resume --experiment 1' \(what "
        r"is stored is kept\)",
        said[0],
    )
    assert m, said[0]
    stored = int(m.group(1))
    assert 0 < stored < PLANNED and _counts(db)["trials"] == stored  # as said
    assert ": ok (" in cli("db", "check", "--db", db, check=True).stdout
    assert netns_of(tb_name) == [] and backlog() == before  # the testbed is gone
    ballast.unlink()
    cp = cli("sweep", "--db", db, "--resume", "--experiment", "1", timeout=300)
    assert cp.returncode == 0, cp.stderr
    assert f"stored {PLANNED - stored} trial(s) in {db} (experiment 1)" in cp.stdout
    counts = _counts(db)
    assert counts["trials"] == PLANNED and counts["trial pairs twice"] == 0  # exactly once
    assert counts["experiments"] == 1 and counts["runs"] == 2  # its start and its resume
    assert ": ok (" in cli("db", "check", "--db", db, check=True).stdout
    assert netns_of(tb_name) == [] and backlog() == before


def _ten(pastrami_dir: Path, db: Path, sweeps: tuple[str, str], doctor: str) -> list[tuple]:
    imp = ("import", "pastrami")
    short = ("--rates", "50k,100k", "--runs", "2", "--duration", "0.3s", "--settle", "0.05s",
             "--no-peak-check", "--db", db)  # fmt: skip
    return [
        (*imp, pastrami_dir / "vm", "--db", db),
        (*imp, pastrami_third(pastrami_dir), "--db", db),
        (*imp, pastrami_dir / "bare-metal", "--db", db),
        (*imp, pastrami_dir, "--db", db),
        (*imp, pastrami_dir, "--db", db),
        ("import", "iperf3", IPERF3, "--db", db, "--contract", "50M"),
        ("sweep", "--name", sweeps[0], *short),
        ("sweep", "--name", sweeps[1], *short),
        ("doctor", "--quick", "--runs", "1", "--name", doctor, "--db", db),
        ("db", "migrate", "--db", db),
    ]


STORE_TROUBLE = ("database", "locked", "damaged", "restore", "UNIQUE", "already exists")


@pytest.mark.slow
def test_ten_writers_of_mixed_kinds_at_once_leave_what_a_serial_run_does(
    pastrami_dir, tmp_path, cli, names
):
    sweeps, doctor = (names(), names()), names()
    serial, together = tmp_path / "serial.db", tmp_path / "together.db"
    for db in (serial, together):
        _old_store(db, {1, 2, 3, 4, 5}).close()  # every writer finds it to migrate
    for args in _ten(pastrami_dir, serial, sweeps, doctor):
        cli(*args, check=True, timeout=300)
    commands = _ten(pastrami_dir, together, sweeps, doctor)
    pipe = subprocess.PIPE
    procs = [
        subprocess.Popen(netassay_argv(*args), stdout=pipe, stderr=pipe, text=True)
        for args in commands
    ]
    try:
        ended = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    finally:
        stop_all(procs)  # type: ignore[arg-type]
    waited = 0
    for (rc, _, err), args in zip(ended, commands, strict=True):
        assert rc == 0, (args, err)
        lines = [ln for ln in err.splitlines() if ln.startswith("netassay:")]
        waits = [ln for ln in lines if ln.startswith("netassay: waiting for another netassay")]
        assert len(waits) <= 1, err  # said once at most
        waited += len(waits)
        assert not [ln for ln in lines if ln not in waits and any(
            w in ln for w in STORE_TROUBLE)], (args, err)  # fmt: skip
    print(f"{waited} of {len(commands)} writers said they waited")
    assert _counts(together) == _counts(serial)
    assert ": ok (" in cli("db", "check", "--db", together, check=True).stdout
