"""netassay soak refuses bad input in one line, exit 2, before it builds or stores
anything; a %pdr load needs a stored search in --db; a resume takes no plan flags."""

from __future__ import annotations

import pytest
from tests.builders import store_with


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "--rate is required"),
        (("--rate", "0"), "bad rate '0'"),
        (("--rate", "90%"), "a share of the PDR is written N%pdr"),
        (("--rate", "500%pdr"), "bad --rate '500%pdr'"),
        (("--rate", "90%pdr"), "--rate 90%pdr needs a stored search"),
        (("--rate", "100k", "--duration", "soon"), "bad duration 'soon'"),
        (("--rate", "100k", "--duration", "5s", "--segment", "10s"), "longer than --duration"),
        (("--rate", "100k", "--segment", "500ms"), "--segment 0.5s is too short"),
        (("--rate", "100k", "--goal", "2"), "bad --goal '2'"),
        (("--rate", "100k", "--fail-on", "never"), "unknown --fail-on 'never'"),
        (("--rate", "100k", "--name", "BAD!"), "bad testbed name 'BAD!'"),
        (("--resume",), "--resume needs --db"),
        (("--resume", "--rate", "100k"), "--resume takes no --rate"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    res = cli("soak", *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert needle in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    assert not (tmp_path / "netassay.db").exists()


def test_a_pdr_share_needs_a_search_that_found_a_pdr(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    no_search = store_with(tmp_path / "flood.db", "mrr")
    res = cli("soak", "--rate", "90%pdr", "--db", no_search)
    assert res.returncode == 2 and "no PDR in" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_nothing_to_resume_in_a_store_without_a_soak(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    db = store_with(tmp_path / "flood.db", "mrr")
    res = cli("soak", "--resume", "--db", db)
    assert res.returncode == 2 and f"nothing to resume in {db}" in res.stderr, res.stderr
