"""netassay rtt's command line: bad input is refused in one line before anything is
built (these checks need no root), and the command is registered with its options."""

from __future__ import annotations

import pytest


def test_rtt_is_a_command(cli):
    res = cli("rtt", "--help")
    assert res.returncode == 0
    for opt in ("--path", "--probe", "--probe-rate", "--count", "--duration", "--runs", "--load",
                "--responder-delay", "--no-capture", "--json", "--db"):  # fmt: skip
        assert opt in res.stdout, opt


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--path", "sriov"], "unknown data path"),
        (["--probe", "tcp"], "unknown probe"),
        (["--probe-rate", "fast"], "bad rate"),
        (["--probe-rate", "20M"], "bad probe rate"),
        (["--count", "0"], "bad --count"),
        (["--count", "10", "--duration", "1s"], "--count or --duration"),
        (["--size", "40"], "bad probe size"),
        (["--runs", "0"], "bad --runs"),
        (["--load", "cpu:500@sender"], "above the limit"),
        (["--load", "gpu:1@sender"], "bad --load"),
        (["--responder", "kernel", "--probe", "udp"], "does not echo UDP"),
        (["--responder", "kernel", "--responder-delay", "1ms"], "needs the app responder"),
        (["--responder-delay", "soon"], "bad duration"),
        (["--responder-delay", "0,1ms,1ms"], "given twice"),
        (["--responder-delay", "0,1ms", "--responder", "kernel"], "needs the app responder"),
        (["--responder-delay", "900ms", "--timeout", "1s"], "below half the reply timeout"),
        (["--name", "Bad-Name"], "bad testbed name"),
        (["--cpus", "7"], "bad cpus"),
        (["--db", "/nonexistent/dir/x.db"], "no such directory"),
    ],
)
def test_bad_input_is_one_line(cli, args, words):
    res = cli("rtt", *args)
    assert res.returncode in (2, 4), res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], res.stderr
