"""netassay batching refuses bad input in one line, exit 2, before it builds or stores
anything; its help names its knobs."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--rate", "0"), "bad rate '0'"),
        (("--rate", "1M"), "bad --rate 1e+06"),
        (("--path", "macvlan"), "bad --path 'macvlan'"),
        (("--gro", "maybe"), "bad --gro 'maybe'"),
        (("--flush", "200us"), "--flush, --defer and --threaded need --gro on"),
        (("--defer", "10"), "need --gro on"),
        (("--gro", "on", "--flush", "soon"), "bad duration 'soon'"),
        (("--gro", "on", "--flush", "1s"), "bad --flush"),
        (("--burst-gap", "200us"), "bad --burst-gap 200 us"),
        (("--count", "1000000", "--rate", "1k"), "would send for over 60 s"),
        (("--runs", "0"), "bad --runs 0"),
        (("--size", "63"), "bad --size 63"),
        (("--gro", "on", "--defer", "-1"), "bad --defer -1"),
        (("--name", "BAD!"), "bad testbed name 'BAD!'"),
        (("--cpus", "all"), "bad --cpus 'all'"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    res = cli("batching", *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert needle in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    assert not (tmp_path / "netassay.db").exists()


def test_help_names_the_knobs(cli):
    res = cli("batching", "--help")
    assert res.returncode == 0
    for flag in ("--gro", "--flush", "--defer", "--threaded", "--burst-gap", "--rate"):
        assert flag in res.stdout
