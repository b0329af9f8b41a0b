"""--rx-affinity (seed 003, section 3.2): where the SUT's receive work runs, resolved
from --pinning by default, a contradicting pair refused in one line, the RPS mask it
writes, recorded with the testbed and shown by 'testbed show'."""

from __future__ import annotations

import os

import pytest

from netassay.config import (
    RX_AFFINITIES,
    TestbedConfig,
    cpu_mask,
    load_config,
    refuse_rx_affinity,
    resolve_rx_affinity,
)
from netassay.errors import InputError, UsageError
from netassay.methods.base import RunOptions
from netassay.shared import lab
from netassay.testbed import show, state, topology


@pytest.mark.parametrize(
    ("pinning", "want"), [("unpinned", "none"), ("pin-1cpu", "bound"), ("pin-2cpu", "bound")]
)
def test_auto_follows_the_pinning(pinning, want):
    assert resolve_rx_affinity("auto", pinning) == want
    cfg = TestbedConfig(pinning=pinning).resolved(2)
    assert cfg.rx_affinity == want
    for explicit in ("bound", "balanced", "none"):
        assert resolve_rx_affinity(explicit, pinning) == explicit


@pytest.mark.parametrize(
    ("pinning", "rx", "cpus"),
    [
        ("pin-2cpu", "auto", (1,)),
        ("pin-2cpu", "bound", (1,)),
        ("pin-2cpu", "balanced", (0, 1)),
        ("pin-1cpu", "bound", (0,)),
        ("unpinned", "auto", ()),
        ("unpinned", "none", ()),
        ("unpinned", "balanced", (0, 1)),
    ],
)
def test_cpus_each_affinity_steers_to(pinning, rx, cpus):
    assert TestbedConfig(pinning=pinning, rx_affinity=rx).rx_cpus(2) == cpus


def test_balanced_spreads_over_every_cpu_of_a_larger_machine():
    assert TestbedConfig(pinning="pin-2cpu", rx_affinity="balanced").rx_cpus(4) == (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("pinning", "rx", "cpus", "sut", "says"),
    [
        ("unpinned", "bound", 2, "router", "no CPU to be bound to"),
        ("pin-2cpu", "none", 2, "router", "steers the SUT's receive work to CPU 1"),
        ("pin-1cpu", "none", 2, "router", "steers the SUT's receive work to CPU 0"),
        ("pin-1cpu", "balanced", 2, "router", "on CPU 0"),
        ("unpinned", "balanced", 1, "router", "has 1"),
        ("pin-2cpu", "balanced", 2, "xdp-router", "one NAPI poll"),
        ("pin-2cpu", "sideways", 2, "router", "known: auto, bound, balanced, none"),
    ],
)
def test_contradicting_pairs_are_refused_in_one_line(pinning, rx, cpus, sut, says):
    with pytest.raises(UsageError) as exc:
        refuse_rx_affinity(pinning, rx, cpus, sut)
    line = exc.value.line()
    assert says in line and "\n" not in line
    assert exc.value.exit_code == 2


def test_validate_refuses_before_anything_is_touched(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with pytest.raises(UsageError, match="--rx-affinity bound with --pinning unpinned"):
        topology.validate(TestbedConfig(pinning="unpinned", rx_affinity="bound"))
    topology.validate(TestbedConfig(pinning="pin-2cpu", rx_affinity="balanced"))
    topology.validate(TestbedConfig(rx_affinity="bound"))  # auto pinning: pin-2cpu here


def test_the_mask_as_rps_cpus_takes_it():
    assert cpu_mask((1,)) == "2"
    assert cpu_mask((0, 1)) == "3"
    assert cpu_mask(tuple(range(4))) == "f"
    assert cpu_mask((0, 32)) == "1,00000001"  # 32-bit groups, as the kernel writes them
    assert cpu_mask(()) == "0"


def test_a_config_file_takes_it_and_refuses_a_bad_value(tmp_path):
    good = tmp_path / "a.toml"
    good.write_text('[testbed]\npinning = "pin-2cpu"\nrx_affinity = "balanced"\n')
    assert load_config(good).testbed.rx_affinity == "balanced"
    bad = tmp_path / "b.toml"
    bad.write_text('[testbed]\nrx_affinity = "spread"\n')
    with pytest.raises(InputError, match=r"b.toml:2: \[testbed\] rx_affinity = 'spread'"):
        load_config(bad)
    assert "auto" in RX_AFFINITIES


def test_recorded_with_the_experiment_and_in_its_label():
    cfg = TestbedConfig(pinning="pin-2cpu", rx_affinity="balanced", size_bytes=64)
    meta = lab.testbed_metadata(cfg, {})
    assert meta["rx_affinity"] == "balanced" and meta["pinning"] == "pin-2cpu"
    assert "rx-balanced" in lab.default_label(cfg, "lab")
    bound = TestbedConfig(pinning="pin-2cpu", size_bytes=64)
    assert lab.testbed_metadata(bound, {})["rx_affinity"] == "bound"  # auto, resolved
    assert "rx-" not in lab.default_label(bound, "lab")


@pytest.mark.parametrize(
    ("rx", "cpus", "says"),
    [("balanced", [0, 1], "CPUs 0,1 (balanced)"), ("bound", [1], "CPU 1 (bound)")],
)
def test_show_says_where_the_receive_work_runs(tmp_path, monkeypatch, rx, cpus, says):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    cfg = TestbedConfig(pinning="pin-2cpu", rx_affinity=rx).resolved(2)
    state.write_state(
        "lab",
        {
            "name": "lab",
            "config": cfg.__dict__,
            "namespaces": {"tg": "na-lab-tg", "sut": "na-lab-sut", "sink": "na-lab-sink"},
            "gen_cpu": 0,
            "sut_cpus": cpus,
            "rps": {"na-lab-sut:sut0": cpu_mask(cpus)},
        },
    )
    monkeypatch.setattr(topology, "list_netns", lambda: ["na-lab-tg", "na-lab-sut", "na-lab-sink"])
    monkeypatch.setattr(state, "read_sysctl", lambda key: "1000")
    text = show.render(show.describe("lab"))
    line = next(ln for ln in text.splitlines() if ln.startswith("  pinning:"))
    assert f"SUT receive {says}" in line and cpu_mask(cpus) in line
    assert f"rx_affinity={rx}" in text
    assert ("in place of the pinning's SUT CPU" in text) == (rx == "balanced")


def test_refused_on_an_external_testbed(tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    state.write_state("ext", {"name": "ext", "kind": "external", "config": {"kind": "external"}})
    with pytest.raises(UsageError) as exc:
        lab.named_testbed(RunOptions(testbed="ext", testbed_flags={"rx_affinity": "bound"}), None)
    line = exc.value.line()
    assert "external: --rx-affinity cannot be given here" in line and "IRQs" in line
    assert "\n" not in line and exc.value.exit_code == 2
