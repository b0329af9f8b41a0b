"""What netassay says of a fixed store stays byte for byte what it said when the store
was made (tests/data/golden/make.py): assess, compare and export, on the PASTRAMI and
MonIPE data, an iperf3 file, one measured experiment of each method, and a campaign.

An intended change of an output is made by regenerating the outputs
(``.venv/bin/python tests/data/golden/make.py --outputs``) in the commit that changes it,
which then says why."""

from __future__ import annotations

import difflib
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import netassay_argv

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
_spec = importlib.util.spec_from_file_location("golden_make", GOLDEN / "make.py")
assert _spec is not None and _spec.loader is not None
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    """Copies of the golden stores (reading writes nothing, but a copy is certain)."""
    d = tmp_path_factory.mktemp("golden")
    for db in (make.STORE, make.CAMPAIGN):
        shutil.copy(db, d / db.name)
    return d


@pytest.mark.parametrize(("db", "args", "name"), make.OUTPUTS, ids=[o[2] for o in make.OUTPUTS])
def test_output_is_byte_identical(stores, db, args, name):
    argv = [*netassay_argv(), *(a.replace("{db}", db.name) for a in args)]
    cp = subprocess.run(argv, capture_output=True, timeout=300, cwd=stores)
    assert cp.returncode == 0, cp.stderr.decode()
    want = make.read_kept(name)
    if cp.stdout != want:
        diff = difflib.unified_diff(
            want.decode().splitlines(), cp.stdout.decode().splitlines(), "kept", "now", n=1,
            lineterm="",
        )  # fmt: skip
        pytest.fail(f"{name} changed:\n" + "\n".join(list(diff)[:40]))


def test_the_golden_stores_are_untouched_by_reading(stores):
    for db in (make.STORE, make.CAMPAIGN):
        assert (stores / db.name).read_bytes() == db.read_bytes()
