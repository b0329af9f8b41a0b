"""--rx-affinity on the command line and in a campaign file: a contradicting or unknown
value is one line and exit 2, with nothing built and nothing stored; the campaign plan
of examples/marian.toml takes it as a factor."""

from __future__ import annotations

from pathlib import Path

import pytest

from netassay.testbed import topology

EXAMPLE = Path(__file__).parents[2] / "examples" / "marian.toml"


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--pinning", "unpinned", "--rx-affinity", "bound"], "no CPU to be bound to"),
        (["--pinning", "pin-1cpu", "--rx-affinity", "balanced"], "on CPU 0"),
        (["--pinning", "pin-2cpu", "--rx-affinity", "none"], "steers the SUT's receive work"),
        (["--sut", "xdp-router", "--rx-affinity", "balanced"], "one NAPI poll"),
        (["--rx-affinity", "spread"], "unknown --rx-affinity 'spread'"),
    ],
)
@pytest.mark.parametrize("command", ["testbed up", "sweep"])
def test_bad_pairs_are_one_line_exit_2_nothing_built_or_stored(cli, tmp_path, flags, says, command):
    db = tmp_path / "x.db"
    extra = ["--name", "rxbad"] if command == "testbed up" else ["--rates", "10k", "--db", db]
    res = cli(*command.split(), *flags, *extra, env_extra={"NETASSAY_RUN_DIR": str(tmp_path)})
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], res.stderr
    assert not db.exists()
    assert not [ns for ns in topology.list_netns() if ns.startswith("na-rxbad-")]
    assert not list(tmp_path.rglob("*rxbad*"))


def test_marian_plan_has_the_affinity_as_its_factor(cli):
    res = cli("campaign", "plan", str(EXAMPLE))
    assert res.returncode == 0, res.stderr
    assert "factors: rx_affinity = bound, balanced" in res.stdout
    assert "cells: 2 (full factorial) x 1 repetition(s) = 2 experiments" in res.stdout
    assert "pinning=pin-2cpu flows=16" in res.stdout


def test_a_campaign_file_with_a_bad_level_is_refused_naming_its_line(cli, tmp_path):
    spec = tmp_path / "m.toml"
    spec.write_text(EXAMPLE.read_text().replace('["bound", "balanced"]', '["bound", "spread"]'))
    res = cli("campaign", "plan", str(spec))
    assert res.returncode in (2, 3), res.stderr
    assert "rx_affinity" in res.stderr and "spread" in res.stderr and "m.toml:" in res.stderr
