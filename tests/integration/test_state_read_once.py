"""A run reads its testbed's state once while its flags are resolved: the load written
as a share of the line rate, the testbed it names (--testbed, checked against its
ports' line rate) and the knobs it runs with all come from that one reading
(``RunOptions.seen``), so they cannot disagree with one another. Counted with the
interpreter's own audit events for the state file's ``open``, through the real command
(in this process: the events are this process's)."""

from __future__ import annotations

import sys
from dataclasses import asdict

import pytest
from typer.testing import CliRunner

from netassay.cli import app
from netassay.errors import UsageError
from netassay.testbed import external, linerate, state

opened: list[str] = []  # the state files opened while a test watches (its paths)
watched: set[str] = set()


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and str(args[0]) in watched:
        opened.append(str(args[0]))


sys.addaudithook(_hook)  # an audit hook stays for the process; it counts only watched


@pytest.fixture
def rack1(tmp_path, monkeypatch):
    """An external testbed 'rack1' registered with 1 Gbit/s ports (its state file)."""
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    cfg = external.make_config(
        tx="enp1s0f0", rx="enp1s0f1", dst_mac="3C:FD:FE:AA:BB:CC", src="198.18.0.2",
        dst="198.19.0.2",
    )  # fmt: skip
    line = linerate.of_ports({"p0": 1000}, 64).as_json()  # 1.488 Mpps at 64 B
    state.write_state("rack1", {"kind": "external", "config": asdict(cfg), "line_rate": line})
    path = str(state.state_path("rack1"))
    watched.add(path)
    opened.clear()
    yield path
    watched.discard(path)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["sweep", "--rates", "10%,50%", "--dry-run"], "loads (2): 142 kpps, 710.2 kpps"),
        (["search", "--max-load", "50%", "--dry-run"], "testbed 'rack1': kind=external"),
    ],
)
def test_a_run_on_a_named_testbed_reads_its_state_once(rack1, args, said):
    res = CliRunner().invoke(app, [*args, "--testbed", "rack1"])
    assert res.exit_code == 0, res.output
    assert said in res.output  # the shares were read against the ports' 1 Gbit/s
    assert opened == [rack1]


def test_a_load_above_the_line_rate_is_refused_from_that_one_reading(rack1):
    res = CliRunner().invoke(app, ["sweep", "--rates", "2M", "--testbed", "rack1", "--dry-run"])
    assert isinstance(res.exception, UsageError)  # the entry point's one line, exit 2
    assert "load 2 Mpps is above the line rate: 1000 Mb/s on p0" in str(res.exception)
    assert opened == [rack1]
