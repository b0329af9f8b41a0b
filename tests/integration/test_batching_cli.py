"""netassay batching refuses bad input in one line, exit 2, before it builds or stores
anything; its help names its knobs."""

from __future__ import annotations

import pytest
from tests.conftest import refused_cleanly


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--probe-rate", "0"), "bad rate '0'"),
        (("--probe-rate", "1M"), "bad --probe-rate 1e+06"),
        (("--path", "macvlan"), "bad --path 'macvlan'"),
        (("--gro", "maybe"), "bad --gro 'maybe'"),
        (("--flush", "200us"), "--flush, --defer and --threaded need --gro on or --xdp on"),
        (("--xdp", "native"), "bad --xdp 'native'"),
        (("--defer", "10"), "need --gro on"),
        (("--gro", "on", "--flush", "soon"), "bad duration 'soon'"),
        (("--gro", "on", "--flush", "1s"), "bad --flush"),
        (("--burst-gap", "200us"), "bad --burst-gap 200 us"),
        (("--count", "1000000", "--probe-rate", "1k"), "would send for over 60 s"),
        (("--runs", "0"), "bad --runs 0"),
        (("--size", "63"), "bad --size 63"),
        (("--gro", "on", "--defer", "-1"), "bad --defer -1"),
        (("--name", "BAD!"), "bad testbed name 'BAD!'"),
        (("--cpus", "all"), "bad --cpus 'all'"),
        (("--probe", "tcp"), "bad --probe 'tcp'"),
        (("--gro", "on", "--busy-poll", "50"), "--busy-poll needs --probe udp"),
        (("--probe", "udp", "--busy-poll", "50"), "--busy-poll needs --gro on or --xdp on"),
        (("--probe", "udp", "--gro", "on", "--busy-poll", "5000"), "bad --busy-poll 5000 us"),
        (("--probe", "udp", "--gro", "on", "--busy-poll", "-1"), "bad --busy-poll -1 us"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    refused_cleanly(cli("batching", *args), needle, tmp_path)


def test_help_names_the_knobs(cli):
    res = cli("batching", "--help")
    assert res.returncode == 0
    for flag in ("--gro", "--xdp", "--flush", "--defer", "--threaded", "--burst-gap",
                 "--probe-rate", "--probe", "--busy-poll"):  # fmt: skip
        assert flag in res.stdout
