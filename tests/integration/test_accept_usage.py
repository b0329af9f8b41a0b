"""netassay accept refuses what cannot be right with one line and its exit code, before
any namespace is built or any datagram sent."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--contract", "fast", "--embedded"], 2, "bad rate 'fast'"),
        (["--contract", "400M"], 2, "say where the link is"),
        (["--contract", "400M", "--embedded", "--server", "198.18.5.2"], 2, "say where"),
        (["--contract", "400M", "--server", "10.1.2.3"], 2, "outside the benchmarking ranges"),
        (["--contract", "400M", "--server", "2001:db8::1"], 2, "outside the benchmarking"),
        (["--contract", "400M", "--embedded", "--layer", "l2"], 2, "unknown layer 'l2'"),
        (["--contract", "400M", "--embedded", "--link-drop", "1.5"], 2, "--link-drop"),
        (
            ["--contract", "400M", "--embedded", "--sender", "netassay-gen", "--datagram", "9000"],
            2,
            "cannot send 9000-byte",
        ),
        (
            ["--contract", "400M", "--server", "198.18.5.2", "--sender", "netassay-gen"],
            2,
            "takes iperf3",
        ),
        (
            ["--contract", "400M", "--embedded", "--scenarios", "/nonexistent.toml"],
            3,
            "cannot read it",
        ),
    ],
)
def test_refused_in_one_line(cli, args, code, needle):
    res = cli("accept", *args)
    assert res.returncode == code, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_a_bad_scenario_stops_the_matrix_before_the_first_runs(cli, tmp_path):
    f = tmp_path / "m.toml"
    f.write_text('[[scenario]]\nname = "ok"\n[[scenario]]\nname = "bad"\nrx_cpu = 99\n')
    res = cli("accept", "--contract", "400M", "--embedded", "--scenarios", str(f))
    assert res.returncode == 2 and "bad rx CPU 99" in res.stderr
    assert "accept: run" not in res.stderr  # nothing ran
