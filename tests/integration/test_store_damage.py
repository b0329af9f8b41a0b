"""A damaged store is never written to (every import refuses it, nothing changes), a
reader warns; a store in a read-only folder (or a read-only file) is read without a
file written beside it, by a user who is not root; advice that works."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from netassay.store.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
IPERF3 = ROOT / "tests" / "data" / "iperf3" / "udp-50M-server.json"


def damage(db: Path) -> bytes:
    """Overwrite the inside of a few b-tree pages (header and page 1 kept), as a disk or
    a copy gone wrong would: SQLite still opens the file. Returns the damaged bytes."""
    raw = bytearray(db.read_bytes())
    page = 4096
    for n in (3, len(raw) // page // 2, len(raw) // page - 2):
        raw[n * page + 100 : n * page + 600] = bytes((i * 37 + 11) % 251 for i in range(500))
    db.write_bytes(bytes(raw))
    return bytes(raw)


@pytest.fixture
def damaged(pastrami_files, tmp_path, cli) -> tuple[Path, bytes]:
    db = tmp_path / "d.db"
    cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    raw = damage(db)
    problems = sqlite3.connect(db).execute("PRAGMA quick_check").fetchall()
    assert problems != [("ok",)], "the damage must be one SQLite's quick check finds"
    return db, raw


def test_a_damaged_store_is_never_written_to(damaged, pastrami_files, tmp_path, cli):
    db, raw = damaged
    for args in (
        ("import", "pastrami", pastrami_files / "ns", "--db", db),
        ("import", "iperf3", IPERF3, "--db", db, "--contract", "50M"),
    ):
        cp = cli(*args)
        assert cp.returncode == 4, (args, cp.stdout, cp.stderr)
        [line] = cp.stderr.strip().splitlines()
        assert "the store is damaged, nothing was written to it" in line
        assert f"netassay db check --db {db}" in line
        assert db.read_bytes() == raw
        assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0


def test_reading_a_damaged_store_warns(damaged, cli):
    db, raw = damaged
    cp = cli("assess", db)
    warned = [ln for ln in cp.stderr.splitlines() if "warning" in ln]
    assert len(warned) == 1 and f"{db} is damaged" in warned[0], cp.stderr
    assert "what is read from it may be wrong" in warned[0]
    assert db.read_bytes() == raw


def test_db_check_of_a_malformed_store_says_to_restore_a_copy(damaged, cli):
    db, _ = damaged
    cp = cli("db", "check", "--db", db)
    assert cp.returncode == 4
    [line] = cp.stderr.strip().splitlines()
    assert "integrity check failed" in line and "restore from a copy" in line
    assert "db check" not in line.split("failed", 1)[1]  # no advice to run itself


def test_quick_check_cost_is_paid_once_per_open(pastrami_files, tmp_path, cli):
    """A healthy store is written to and read with no warning."""
    db = tmp_path / "h.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    cp = cli("import", "pastrami", pastrami_files / "ns", "--db", db)
    assert cp.returncode == 0 and not cp.stderr, cp.stderr
    cp = cli("assess", db)
    assert cp.returncode == 0 and "warning" not in cp.stderr


# -- advice that works --------------------------------------------------------------------
def _set_version(db: Path, version: int) -> None:
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO schema_migrations VALUES (?, 'from elsewhere', 'then')", (version,))
    conn.commit()
    conn.close()


def test_a_newer_store_says_upgrade_and_is_left_alone(pastrami_files, tmp_path, cli):
    db = tmp_path / "n.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    _set_version(db, SCHEMA_VERSION + 1)
    before = db.read_bytes()
    for args in (("assess", db), ("import", "pastrami", pastrami_files / "ns", "--db", db)):
        cp = cli(*args)
        assert cp.returncode == 4 and "upgrade netassay" in cp.stderr, cp.stderr
        assert "netassay import" not in cp.stderr
    assert db.read_bytes() == before


@pytest.mark.slow
def test_an_older_store_says_db_migrate_and_that_works(pastrami_files, tmp_path, cli, old_store):
    db = tmp_path / "o.db"
    old_store(db, {1, 2, 3, 4, 5}).close()
    cp = cli("assess", db)
    assert cp.returncode == 4 and f"netassay db migrate --db {db}" in cp.stderr, cp.stderr
    cp = cli("db", "migrate", "--db", db)
    assert cp.returncode == 0 and f"migrated from schema 5 to {SCHEMA_VERSION}" in cp.stdout
    assert cli("db", "check", "--db", db).returncode == 0
    cp = cli("db", "migrate", "--db", db)
    assert cp.returncode == 0 and "already" in cp.stdout


# -- read-only places, as a user who is not root -----------------------------------------
def _as_user() -> tuple[list[str], dict[str, str]]:
    """How to run the CLI as a user who is not root: ourselves when we are not root, else
    'nobody' through setpriv with a Python that user may run (the venv's may live in a
    home no one else can enter) and this checkout's packages on its path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="netassay-mpl-")  # a home it may write
    os.chmod(env["MPLCONFIGDIR"], 0o777)
    if os.geteuid() != 0:
        return [sys.executable], env
    py = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin")
    if py is None:
        pytest.fail(
            f"no /usr/bin/python{sys.version_info.major}.{sys.version_info.minor} to run as nobody"
        )
    site = next(p for p in sys.path if p.endswith("site-packages") and ".venv" in p)
    env["PYTHONPATH"] = f"{ROOT / 'src'}:{site}"
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return [*drop, py], env


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder that 'nobody' can reach (pytest's tmp_path is private to its user)."""
    d = Path(tempfile.mkdtemp(prefix="netassay-ro-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in d.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(d)


def _run_as_user(*args: object) -> subprocess.CompletedProcess[str]:
    cmd, env = _as_user()
    return subprocess.run([*cmd, "-m", "netassay", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip


def test_a_store_in_a_read_only_folder_is_read_by_another_user(pastrami_files, open_dir, cli):
    ro = open_dir / "ro"
    ro.mkdir()
    db = ro / "x.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    ro.chmod(0o555)
    db.chmod(0o444)
    assert stat.S_IMODE(ro.stat().st_mode) == 0o555
    cp = _run_as_user("assess", db, "--json")
    assert cp.returncode == 0, cp.stderr
    assert len(cp.stdout.splitlines()) == 2 and json.loads(cp.stdout.splitlines()[0])["verdict"]
    cp = _run_as_user("db", "check", "--db", db)
    assert cp.returncode == 0 and ": ok (" in cp.stdout, cp.stderr
    assert sorted(p.name for p in ro.iterdir()) == ["x.db"]


@pytest.mark.slow
def test_a_read_only_file_in_a_writable_folder_leaves_nothing_beside_it(
    pastrami_files, open_dir, cli
):
    mine = open_dir / "mine"
    mine.mkdir()
    db = mine / "x.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    if os.geteuid() == 0:
        os.chown(mine, 65534, 65534)
        os.chown(db, 65534, 65534)
    for mode in (0o444, 0o644):  # read-only, then writable: a reader writes neither way
        db.chmod(mode)
        for args in (("assess", db), ("export", "--db", db, "--format", "jsonl")):
            cp = _run_as_user(*args)
            assert cp.returncode == 0, (mode, args, cp.stderr)
        assert sorted(p.name for p in mine.iterdir()) == ["x.db"], mode


@pytest.mark.slow
def test_ordinary_mistakes_with_output_paths_are_one_line(pastrami_files, open_dir, tmp_path, cli):
    """A report into a folder the user may not write, an export into a folder that does
    not exist or onto a folder: one line, exit 3, nothing half-written."""
    ro = open_dir / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    cp = _run_as_user("report", pastrami_files / "vm", "--out", ro / "r")
    assert cp.returncode == 3, cp.stderr
    [line] = cp.stderr.strip().splitlines()
    assert f"cannot write the report to {ro / 'r'}" in line and "internal error" not in line
    db = tmp_path / "x.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    for out, words in ((tmp_path / "nodir" / "x.csv", "its folder does not exist"),
                       (tmp_path, "is a folder")):  # fmt: skip
        cp = cli("export", "--db", db, "--out", out)
        assert cp.returncode == 3 and words in cp.stderr, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]
