"""Two testbeds on one host: a host-wide sysctl one holds is never changed under it by
the other; the default pinning is recorded as the value used.

Needs root and netassay-gen (skipped with the reason otherwise). Every testbed here is
named ``sy...`` and removed after the test, even on failure; nothing else is touched.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from netassay.config import resolve_pinning
from netassay.testbed import state

pytestmark = pytest.mark.system


@pytest.fixture
def other_name(lab_env, tb_name) -> Iterator[str]:
    """A second fresh testbed name (removed after the test, like tb_name)."""
    from netassay.testbed import topology

    name = "sy" + secrets.token_hex(3)
    while name == tb_name:
        name = "sy" + secrets.token_hex(3)
    try:
        yield name
    finally:
        topology.cleanup({name})
        assert not [ns for ns in topology.list_netns() if ns.startswith(f"na-{name}-")]


def _one_line(res) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_a_second_testbed_cannot_change_a_global_the_first_holds(
    tb_name, other_name, cli, netns_of, backlog
):
    original = backlog()
    a, b = tb_name, other_name
    up_a = cli("testbed", "up", "--name", a, "--backlog", "4321")
    assert up_a.returncode == 0, up_a.stderr
    assert backlog() == "4321"

    refused = cli("testbed", "up", "--name", b, "--backlog", "10000")
    assert refused.returncode == 5, refused.stderr
    line = _one_line(refused)
    assert f"testbed '{b}' needs net.core.netdev_max_backlog=10000" in line
    assert f"testbed '{a}' is up and holds it at 4321" in line
    assert backlog() == "4321"  # untouched
    assert netns_of(b) == [] and state.read_state(b) is None  # nothing of b was built
    assert state.read_state(a)["sysctls"] == {"net.core.netdev_max_backlog": "4321"}
    assert len(netns_of(a)) == 3

    same = cli("testbed", "up", "--name", b, "--backlog", "4321")  # same value: allowed
    assert same.returncode == 0, same.stderr
    assert len(netns_of(b)) == 3

    assert cli("testbed", "down", "--name", b).returncode == 0
    assert backlog() == "4321"  # a is still up: nothing restored under it
    assert cli("testbed", "down", "--name", a).returncode == 0
    assert backlog() == original


def test_a_testbed_without_the_global_may_join(tb_name, other_name, cli, netns_of, backlog):
    a, b = tb_name, other_name
    assert cli("testbed", "up", "--name", a, "--backlog", "4321").returncode == 0
    res = cli("testbed", "up", "--name", b)  # sets no global: nothing to fight over
    assert res.returncode == 0, res.stderr
    assert state.read_state(b)["sysctls"] == {}
    assert backlog() == "4321"


def test_default_pinning_is_recorded_as_used(tb_name, other_name, cli, tmp_path, stored):
    want, _ = resolve_pinning("auto")
    up = cli("testbed", "up", "--name", tb_name)
    assert up.returncode == 0, up.stderr
    assert state.read_state(tb_name)["config"]["pinning"] == want
    show = cli("testbed", "show", "--name", tb_name)
    assert show.returncode == 0, show.stderr
    chosen = [ln for ln in show.stdout.splitlines() if "pinning chosen:" in ln]
    assert len(chosen) == 1 and want in chosen[0] and "'auto'" in chosen[0]

    db = tmp_path / "lab.db"
    res = cli(
        "sweep", "--name", other_name, "--rates", "10k", "--runs", "1",
        "--duration", "0.2s", "--db", str(db), "--no-peak-check",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    exp, _ = stored(db)
    assert exp.config["testbed"]["pinning"] == want
    assert exp.metadata["pinning"] == want
