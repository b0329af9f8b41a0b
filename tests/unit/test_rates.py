"""Loads in bit/s at a layer and as shares of the line rate: the conversion's
exact numbers, what is refused, what frames/s inputs keep meaning, and the record a
run stores and its views show."""

from __future__ import annotations

import pytest

from netassay.config import Config, TestbedConfig
from netassay.errors import UsageError
from netassay.loads import parse_layer, parse_line_rate, written
from netassay.methods.base import RunOptions
from netassay.shared.rates import (
    Frames,
    loads,
    rates_json,
    rates_lines,
    resolve,
)
from netassay.units import parse_rates

RFC64 = Frames(60, 1, "60-byte frames")  # 64 bytes with the FCS: 84 at L1, 64 at L2


def test_one_gigabit_at_l1_in_64_byte_frames_is_1488095_frames_per_second():
    assert loads("1Gbps", RFC64) == [1_488_095.0]  # 1e9 / (8 * 84) = 1,488,095.2
    assert loads("1Gbit", Frames(60, 2, "")) == [1_953_125.0]  # 1e9 / (8 * 64)
    assert loads("1Gbit/s", Frames(64, 1, "")) == [1_420_454.0]  # --size 64: 88 B at L1
    assert loads("500Mbps", Frames(1514, 1, "")) == [40_637.0]  # 5e8 / (8 * 1538) = 40637.2
    assert loads("500Mbps", Frames(1514, 2, "")) == [41_172.0]  # 5e8 / (8 * 1518) = 41172.6


def test_a_mix_converts_with_its_mean_frame():
    simple = Frames(4322 / 12, 1, "imix")  # 7*64 + 4*590 + 1514 over 12 frames
    assert loads("1Gbps", simple) == [325_379.0]  # 1e9 / (8 * 384.17) = 325,379.9


def test_shares_of_the_line_rate_step_in_percent_and_100_percent_is_the_line_rate():
    ten = Frames(60, 1, "60-byte frames", 10e9, "--line-rate")
    got = loads("10%:100%:10%", ten)
    assert len(got) == 10 and got[0] == 1_488_095.0 and got[-1] == 14_880_952.0
    assert loads("50%", ten) == [7_440_476.0]
    # a share is of the L1 line rate whatever --layer says of bit rates
    assert loads("50%", Frames(60, 2, "", 10e9, "--line-rate")) == [7_440_476.0]


def test_frames_per_second_keep_their_meaning():
    for text in ("200k", "1G", "50k:600k:50k", "1.5M,2M", "250000"):
        assert not written(text)
        assert loads(text, RFC64) == parse_rates(text)
    assert written("1Gbps") and written("10%:50%:10%") and written("100k,1Gbps")
    assert not written("90%pdr") and not written(None)


@pytest.mark.parametrize(
    ("text", "frames", "said"),
    [
        ("50%", RFC64, "--rates 50%: the line rate is unknown"),
        ("150%", Frames(60, 1, "", 1e9, "x"), "a share of the line rate is in (0, 100]%"),
        ("0%", Frames(60, 1, "", 1e9, "x"), "a share of the line rate is in (0, 100]%"),
        ("100k:1Gbps:100k", RFC64, "a range's three parts mix units"),
        ("1Gbps,100Mbps", RFC64, "must increase strictly"),
        ("2Gbps", Frames(60, 1, "", 1e9, "port eth1"), "is above the line rate"),
        ("100bps", RFC64, "is below 1 frame/s"),
        ("1GBps", RFC64, "bad rate '1GBps'"),  # bytes are not bits: not a unit netassay takes
    ],
)
def test_what_cannot_be_converted_is_refused_in_one_line(text, frames, said):
    with pytest.raises(UsageError) as exc:
        loads(text, frames)
    assert said in exc.value.line()


def test_the_layer_and_the_line_rate_flags():
    assert parse_layer("l1") == parse_layer("L1") == 1 and parse_layer("l2") == 2
    assert parse_line_rate("10G") == parse_line_rate("10Gbps") == 1e10
    for bad, call in (("l3", parse_layer), ("fast", parse_line_rate)):
        with pytest.raises(UsageError):
            call(bad)


def test_resolve_replaces_the_written_loads_and_says_what_was_written(monkeypatch, tmp_path):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))  # no testbed of that name is up
    given = {"rates": "2Mbps,10Mbps", "layer": None, "line_rate": None}
    opts = RunOptions(name="zz", testbed_flags={"size_bytes": 64},
                      config=Config(testbed=TestbedConfig(size_bytes=64)))  # fmt: skip
    out, record = resolve(given, opts, {"rates": "--rates"}, lists=("rates",))
    assert out["rates"] == "2840,14204"  # 88 B at L1 per 64-byte frame
    assert record is not None and record["written"] == {"--rates": "2Mbps,10Mbps"}
    assert record["bits_per_frame"] == {"l1": 704.0, "l2": 544.0}
    doc = rates_json(record)["loads"]["--rates"]
    assert [d["rate_bps"] for d in doc] == [2840 * 704.0, 14204 * 704.0]
    assert [d["rate_bps_l2"] for d in doc] == [2840 * 544.0, 14204 * 544.0]
    (line,) = rates_lines(record)
    assert line.startswith("--rates 2Mbps,10Mbps, 64-byte frames (88 B each at L1): 2,840")
    # frames/s given: nothing replaced, nothing recorded; --layer then makes no sense
    assert resolve({"rates": "10k"}, opts, {"rates": "--rates"}) == ({"rates": "10k"}, None)
    with pytest.raises(UsageError, match="--layer with loads in frames/s"):
        resolve({"rates": "10k", "layer": "l2"}, opts, {"rates": "--rates"})
    with pytest.raises(UsageError, match="it takes one load"):
        resolve({"rate": "10%:20%:10%", "line_rate": "1G"}, opts, {"rate": "--rate"})


def test_an_external_testbed_s_port_speed_is_its_line_rate(monkeypatch, tmp_path):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    from netassay.testbed import state

    state.write_state("rack1", {
        "kind": "external",
        "config": {"kind": "external", "tx": "eth1", "rx": "eth2", "size_bytes": 64},
        "line_rate": {"speed_mbps": 10000, "size_bytes": 64, "limited_by": "eth1"},
    })  # fmt: skip
    opts = RunOptions(testbed="rack1")
    out, record = resolve({"rates": "10%,50%"}, opts, {"rates": "--rates"}, lists=("rates",))
    assert out["rates"] == "1420454,7102272"  # 10 Gbit/s at L1 in 88-byte frames
    assert record is not None and record["line_rate_from"] == "port eth1"
    assert record["line_rate_bps"] == 1e10
    assert rates_lines(record)[0].startswith("--rates 10%,50% of 10 Gbit/s (port eth1) at L1")
    with pytest.raises(UsageError, match="reports 10000 Mb/s: that is its line rate"):
        resolve({"rates": "50%", "line_rate": "1G"}, opts, {"rates": "--rates"})
    with pytest.raises(UsageError, match="is above the line rate"):
        resolve({"rates": "11Gbps"}, opts, {"rates": "--rates"})
