"""What an external testbed accepts and refuses before anything on the host is read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from netassay.errors import TestbedError, UsageError
from netassay.testbed import external

GOOD = dict(tx="enp1s0f0", rx="enp1s0f1", dst_mac="3C:FD:FE:AA:BB:CC", src="198.18.0.2",
            dst="198.19.0.2")  # fmt: skip


def cfg(**kw):
    return external.make_config(**{**GOOD, **kw})


def refused(c) -> str:
    with pytest.raises(UsageError) as err:
        external.validate(c)
    line = err.value.line()
    assert "\n" not in line
    return line


def test_a_good_config_passes_and_is_normalised():
    c = cfg()
    external.validate(c)
    assert c.dst_mac == "3c:fd:fe:aa:bb:cc" and c.ip_version == 4
    assert c.sut == "external" and c.global_sysctls() == {}
    c6 = cfg(src="2001:2:0:1::2", dst="2001:2:0:2::2", size_bytes=84)
    external.validate(c6)
    assert c6.ip_version == 6


@pytest.mark.parametrize("dst", ["10.0.0.1", "8.8.8.8", "198.20.0.1"])
def test_destinations_outside_the_benchmarking_ranges_are_refused(dst):
    line = refused(cfg(dst=dst))
    assert f"refusing --dst {dst}" in line and "--allow-any-destination" in line
    external.validate(cfg(dst=dst, allow_any_destination=True))


def test_ipv6_outside_2001_2_48_is_refused():
    assert "2001:2::/48" in refused(cfg(src="2001:2::2", dst="2001:db8::1", size_bytes=84))


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"tx": "eth0/x"}, "bad --tx"),
        ({"rx": "a" * 16}, "bad --rx"),
        ({"rx": ""}, "bad --rx"),
        ({"tx": "p0", "rx": "p0"}, "both p0"),
        ({"dst_mac": "3c:fd:fe:aa:bb"}, "bad --dst-mac"),
        ({"dst_mac": "ff:ff:ff:ff:ff:ff"}, "multicast, broadcast or zero"),
        ({"dst_mac": "01:00:5e:00:00:01"}, "multicast"),
        ({"expect_mac": "zz:00:00:00:00:00"}, "bad --expect-mac"),
        ({"src": "2001:2::2"}, "different IP versions"),
        ({"src": "not-an-ip"}, "bad --src or --dst"),
        ({"size_bytes": 63}, "bad frame size 63"),
        ({"flows": 0}, "bad flow count"),
        ({"netns": "a b"}, "bad --netns"),
        ({"sut_counters_cmd": "ssh 'r1"}, "bad --sut-counters-cmd"),
        ({"sut_counters_cmd": "  "}, "empty --sut-counters-cmd"),
    ],
)
def test_bad_values_are_refused_in_one_line(kw, says):
    assert says in refused(cfg(**kw))


def test_only_the_xdp_sink_counts_here():
    assert "sink 'nft' is not available" in refused(replace(cfg(), sink="nft"))


def test_generator_flags_follow_the_namespace_and_the_destination_rule():
    assert external.gen_flags(cfg()) == ["--allow-host-netns"]
    assert external.gen_flags(cfg(netns="ports")) == []
    assert external.gen_flags(cfg(netns="ports", dst="10.1.1.1", allow_any_destination=True)) == [
        "--allow-any-dst"
    ]


def test_state_round_trip():
    """From a testbed's state, and from a stored sweep's config (what a resume reads:
    the kind is inside the config there)."""
    from dataclasses import asdict

    from netassay.testbed.bed import config_from_state

    c = cfg(sut_counters_cmd="ssh r1 nstat -az", gen_cpu=0)
    assert external.config_from_state({"config": {**asdict(c), "unknown": 1}}) == c
    assert config_from_state({"kind": "external", "config": asdict(c)}) == c
    assert config_from_state({"config": asdict(c)}) == c


def _opts(testbed, name, flags):
    """A run's options naming ``testbed`` (--testbed), ``name`` (--name) and testbed
    ``flags``, with nothing read yet."""
    from netassay.methods.base import RunOptions

    return RunOptions(testbed=testbed, name=name, testbed_flags=flags)


def test_sweep_and_search_on_a_named_testbed(tmp_path, monkeypatch):
    """--testbed: it must exist, an external one takes no knob flags, and loads above
    its ports' line rate are refused before anything runs."""
    from dataclasses import asdict

    from netassay.errors import TestbedError
    from netassay.shared.lab import named_testbed
    from netassay.testbed import linerate, state
    from netassay.units import parse_rates

    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    assert named_testbed(_opts(None, "lab", {}), [1e6]) == "lab"
    with pytest.raises(TestbedError, match="no testbed named 'rack1'"):
        named_testbed(_opts("rack1", None, {}), [1e6])
    line = linerate.of_ports({"p0": 1000}, 64).as_json()  # 1.42 Mpps
    state.write_state("rack1", {"kind": "external", "config": asdict(cfg()), "line_rate": line})
    assert named_testbed(_opts("rack1", None, {}), parse_rates("100k:1.4M:100k")) == "rack1"
    assert named_testbed(_opts("rack1", "rack1", {}), None, "--max-load") == "rack1"
    with pytest.raises(UsageError, match="--name lab and --testbed rack1 differ"):
        named_testbed(_opts("rack1", "lab", {}), [1e6])
    with pytest.raises(UsageError, match="size_bytes cannot be given here"):
        named_testbed(_opts("rack1", None, {"size_bytes": 128}), [1e6])
    with pytest.raises(UsageError, match=r"--max-load 2 Mpps is above the line rate"):
        named_testbed(_opts("rack1", None, {}), [2e6], "--max-load")


def test_bidirectional_needs_a_source_in_the_ranges_and_a_free_tx_port():
    """The reverse direction is sent to --src and counted on the tx port: a --src outside
    the benchmarking ranges (without --allow-any-destination) and a tx port that runs
    another XDP program are refused in one line (nothing on the host is read first)."""
    free = {"tx": {"xdp_prog": None}, "rx": {"xdp_prog": None}}
    with pytest.raises(UsageError) as err:
        external._refuse_reverse(cfg(src="10.0.0.2", dst="198.19.0.2"), free)
    line = err.value.line()
    assert "\n" not in line and "refusing --bidirectional to --src 10.0.0.2" in line
    busy = {"tx": {"xdp_prog": 42}, "rx": {"xdp_prog": None}}
    with pytest.raises(TestbedError) as exc:
        external._refuse_reverse(cfg(allow_any_destination=True, src="10.0.0.2"), busy)
    assert "the tx port enp1s0f0 already runs an XDP program (id 42)" in exc.value.line()
