"""The default pinning 'auto': resolved for the machine at hand when a testbed is built,
recorded resolved (never 'auto'), shown with the reason; 'config show' prints 'auto'."""

from __future__ import annotations

import os

import pytest

from netassay import cli
from netassay.config import PINNINGS, TestbedConfig, load_config, resolve_pinning
from netassay.errors import UsageError
from netassay.testbed import show, state, topology


@pytest.fixture
def cpus(monkeypatch):
    """Pretend this machine has N CPUs."""

    def set_cpus(n):
        monkeypatch.setattr(os, "cpu_count", lambda: n)

    return set_cpus


@pytest.mark.parametrize(("n", "want"), [(1, "unpinned"), (2, "pin-2cpu"), (4, "pin-2cpu")])
def test_auto_resolution_by_cpu_count(cpus, n, want):
    cpus(n)
    got, why = resolve_pinning("auto")
    assert got == want
    assert "'auto'" in why and f"{n}-CPU" in why and "\n" not in why
    assert TestbedConfig().pinning == "auto"
    assert TestbedConfig().resolved().pinning == want
    assert resolve_pinning("auto", n) == (got, why)  # the count can be given, too


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("pinning", ["unpinned", "pin-1cpu", "pin-2cpu"])
def test_explicit_pinnings_are_kept(cpus, n, pinning):
    cpus(n)
    assert resolve_pinning(pinning)[0] == pinning
    assert TestbedConfig(pinning=pinning).resolved().pinning == pinning


def test_auto_is_the_default_and_a_known_value():
    assert "auto" in PINNINGS
    assert TestbedConfig().pinning == "auto"


@pytest.mark.parametrize(("n", "want"), [(1, "unpinned"), (2, "pin-2cpu"), (4, "pin-2cpu")])
def test_loaded_config_is_resolved_but_config_show_says_auto(cpus, capsys, n, want):
    cpus(n)
    assert load_config(None).testbed.pinning == want
    assert load_config(None, resolve=False).testbed.pinning == "auto"
    cli.main(["config", "show"])
    assert 'pinning = "auto"' in capsys.readouterr().out


def test_validate_checks_what_auto_resolves_to(cpus):
    cpus(1)
    topology.validate(TestbedConfig())  # auto on one CPU: unpinned, valid
    with pytest.raises(UsageError, match="needs 2 CPUs"):
        topology.validate(TestbedConfig(pinning="pin-2cpu"))
    cpus(2)
    topology.validate(TestbedConfig())


@pytest.mark.parametrize(("n", "want"), [(1, "unpinned"), (2, "pin-2cpu"), (4, "pin-2cpu")])
def test_build_records_the_resolved_pinning_and_why(cpus, tmp_path, monkeypatch, n, want):
    """The state written as the build starts holds the resolved value, never 'auto'."""
    cpus(n)
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    monkeypatch.setattr(topology, "list_netns", list)

    def stop(name, cfg):
        assert cfg.pinning == want  # what the build uses
        raise RuntimeError("stop before touching the kernel")

    monkeypatch.setattr(topology, "_links", stop)
    with pytest.raises(RuntimeError, match="stop before"):
        topology.build("lab", TestbedConfig())
    st = state.read_state("lab")
    assert st["config"]["pinning"] == want
    assert "chosen by 'auto'" in st["pinning_reason"] and f"{n}-CPU" in st["pinning_reason"]


def test_show_says_which_pinning_and_why(tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    _, why = resolve_pinning("auto", 2)
    state.write_state(
        "lab",
        {
            "name": "lab",
            "config": TestbedConfig().resolved(2).__dict__,
            "namespaces": {"tg": "na-lab-tg", "sut": "na-lab-sut", "sink": "na-lab-sink"},
            "pinning_reason": why,
            "gen_cpu": 0,
            "sut_cpu": 1,
        },
    )
    monkeypatch.setattr(topology, "list_netns", lambda: ["na-lab-tg", "na-lab-sut", "na-lab-sink"])
    monkeypatch.setattr(state, "read_sysctl", lambda key: "1000")
    text = show.render(show.describe("lab"))
    lines = [ln for ln in text.splitlines() if "pinning chosen" in ln]
    assert lines == [f"  pinning chosen: {why}"]
    assert "pin-2cpu, chosen by 'auto' on this 2-CPU machine" in lines[0]
