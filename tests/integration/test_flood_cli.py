"""netassay flood refuses bad input in one line, exit 2, before it builds anything."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--runs", "0"), "--runs 0 is out of range"),
        (("--runs", "101"), "--runs 101 is out of range"),
        (("--duration", "0s"), "bad duration '0s'"),
        (("--duration", "soon"), "bad duration 'soon'"),
        (("--sut", "bridge", "--rx-mode", "backlog"), "a flood of a bridge needs --rx-mode napi"),
        (("--sink", "nft"), "a flood needs the XDP sink"),
        (("--name", "BAD!"), "bad testbed name 'BAD!'"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    res = cli("flood", *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert needle in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
