"""IMIX: a mix's parsing, its cycle's order and counts (the same as
netassay-gen's, ``gen/src/mix.rs``), its rates at each layer, the testbed knob's checks,
and a mix's counts per size from the sink's counters to the sweep's view."""

from __future__ import annotations

import pytest

from netassay import imix
from netassay.config import TestbedConfig
from netassay.counters.loss import flatten
from netassay.errors import UsageError
from netassay.shared.imix_sizes import MixAtLoad, mix_json, mix_lines
from netassay.testbed import topology
from netassay.traffic.generator import GenResult, build_args
from netassay.trial.engine import per_size

SIMPLE = "64:7,590:4,1514:1"


def test_simple_is_trex_imix_without_the_fcs_its_60_raised_to_the_smallest_frame():
    assert imix.parse_imix("simple", 4) == ((64, 7), (590, 4), (1514, 1))
    assert imix.parse_imix(" Simple ", 6) == ((84, 7), (590, 4), (1514, 1))
    assert imix.spec(imix.parse_imix("simple", 4)) == SIMPLE
    assert imix.parse_imix("1514:1, 64:7", 4) == ((1514, 1), (64, 7))  # the order given


@pytest.mark.parametrize(
    ("text", "ip", "said"),
    [
        ("64:7,594", 4, "'594' is not SIZE:WEIGHT"),
        ("64:7;594:4", 4, "'64:7;594:4' is not SIZE:WEIGHT"),
        ("", 4, "'' is not SIZE:WEIGHT"),
        ("63:1", 4, "63 bytes cannot be sent over IPv4 (64..1518)"),
        ("64:1", 6, "64 bytes cannot be sent over IPv6 (84..1518)"),
        ("1519:1", 4, "1519 bytes cannot be sent"),
        ("64:0", 4, "the weight of 64 is 0"),
        ("64:-1", 4, "'64:-1' is not SIZE:WEIGHT"),
        ("64:1.5", 4, "'64:1.5' is not SIZE:WEIGHT"),
        ("64:1,64:2", 4, "64 is given twice"),
        ("64:10001", 4, "at most 16 sizes and 10000 frames"),
    ],
)
def test_a_mix_that_does_not_parse_is_refused_in_one_line(text, ip, said):
    with pytest.raises(UsageError) as e:
        imix.parse_imix(text, ip)
    line = e.value.line()
    assert said in line and "\n" not in line and line.startswith(f"--imix {text}")
    assert e.value.exit_code == 2


def test_the_cycle_spreads_each_size_and_holds_its_weight():
    mix = imix.parse_imix("simple", 4)
    # the same order netassay-gen sends (gen/src/mix.rs holds it too)
    assert imix.cycle(mix) == [64, 590, 64, 64, 590, 64, 1514, 64, 590, 64, 590, 64]
    odd = imix.parse_imix("100:5,200:3,300:2,1518:13", 4)
    order = imix.cycle(odd)
    assert len(order) == 23 and {s: order.count(s) for s, _ in odd} == dict(odd)
    assert "1518,1518,1518,1518" not in ",".join(map(str, order))  # spread, not a block


def test_sent_per_size_is_whole_cycles_then_the_cycles_first_frames():
    mix = imix.parse_imix("simple", 4)
    assert imix.sent_per_size(mix, 0) == {64: 0, 590: 0, 1514: 0}
    assert imix.sent_per_size(mix, 12_000) == {64: 7000, 590: 4000, 1514: 1000}
    assert imix.sent_per_size(mix, 5_000) == {64: 2917, 590: 1666, 1514: 417}  # 416 * 12 + 8
    assert all(sum(imix.sent_per_size(mix, n).values()) == n for n in range(40))


def test_bits_per_frame_at_l2_and_l1():
    mix = imix.parse_imix("simple", 4)
    mean = (7 * 64 + 4 * 590 + 1514) / 12  # 360.17 B without the FCS
    assert imix.mean_frame_bytes(mix) == pytest.approx(mean)
    assert imix.bits_per_frame(mix, 2) == pytest.approx(8 * (mean + 4))
    assert imix.bits_per_frame(mix, 1) == pytest.approx(8 * (mean + 24))
    assert imix.bits_per_frame(((64, 1),), 1) == 8 * 88  # one 64-byte frame: 88 on the wire
    assert imix.from_spec(SIMPLE) == mix


def test_the_testbed_knob_refuses_a_bad_mix_a_size_beside_it_and_the_nft_sink():
    ok = TestbedConfig(imix="simple")
    topology.validate_mix(ok)
    assert ok.imix_spec() == SIMPLE and ok.resolved().size_bytes is None
    assert TestbedConfig().imix_spec() is None and TestbedConfig().resolved().size_bytes == 64
    for cfg, said in [
        (TestbedConfig(imix="simple", size_bytes=64), "--imix with --size"),
        (TestbedConfig(imix="64:1", ip_version=6), "64 bytes cannot be sent over IPv6"),
        (TestbedConfig(imix="simple", sink="nft"), "--imix with --sink nft"),
    ]:
        with pytest.raises(UsageError) as e:
            topology.validate_mix(cfg)
        assert said in e.value.line()


def test_the_generator_is_asked_for_the_mix_instead_of_a_size():
    argv = build_args("tg0", "02:00:00:00:00:01", "198.18.0.2", "198.19.0.2", 1e3, 1.0,
                      imix=SIMPLE)  # fmt: skip
    assert argv[argv.index("--imix") + 1] == SIMPLE and "--size" not in argv
    assert "--imix" not in build_args(
        "tg0", "02:00:00:00:00:01", "198.18.0.2", "198.19.0.2", 1e3, 1.0
    )


def _gen(sent: dict[str, int]) -> GenResult:
    keys = ("technique", "planned", "sent", "first_tx_ns", "last_tx_ns", "duration_s",
            "rate_pps", "achieved_rate_pps", "rate_error", "lateness_max_ns",
            "lateness_p99_ns", "retries", "stopped_by_signal", "ok")  # fmt: skip
    raw = {**dict.fromkeys(keys, 0), "sent": sum(sent.values()), "sent_per_size": sent}
    return GenResult.from_json(raw)


def test_a_trial_stores_sent_and_received_per_size_from_the_generator_and_the_sink():
    before = flatten({"sink_xdp": {"packets": 10, "per_size": {"64": 7, "590": 2, "1514": 1}}})
    after = flatten({"sink_xdp": {"packets": 22, "per_size": {"64": 14, "590": 6, "1514": 2}}})
    assert after["sink/xdp/size590/packets"] == 6 and after["sink/xdp/packets"] == 22
    d = {k: after[k] - before[k] for k in after}
    got = per_size(SIMPLE, _gen({"64": 7, "590": 4, "1514": 1}), d)
    assert got == {
        "mix": SIMPLE,
        "sizes": {
            "64": {"sent": 7, "received": 7},
            "590": {"sent": 4, "received": 4},
            "1514": {"sent": 1, "received": 1},
        },
    }


def test_the_view_states_the_mix_its_rates_at_l2_and_l1_and_loss_on_all_and_per_size():
    load = MixAtLoad(12_000.0)
    for _ in range(2):
        load.add({"64": {"sent": 7000, "received": 7000},
                  "590": {"sent": 4000, "received": 3000},
                  "1514": {"sent": 1000, "received": 1000}})  # fmt: skip
    doc = mix_json(SIMPLE, [load])
    (row,) = doc["loads"]
    assert doc["imix"] == SIMPLE and row["runs"] == 2
    assert (row["sent"], row["received"]) == (24_000, 22_000)
    assert row["loss_ratio"] == pytest.approx(2 / 24)
    assert row["sizes"]["590"] == {"sent": 8000, "received": 6000, "loss_ratio": 0.25}
    assert row["sizes"]["64"]["loss_ratio"] == 0
    assert row["rate_bps_l2"] == pytest.approx(12_000 * 8 * (4322 / 12 + 4))
    assert row["rate_bps_l1"] == pytest.approx(12_000 * 8 * (4322 / 12 + 24))
    lines = mix_lines(SIMPLE, [load])
    assert "frame mix 64:7,590:4,1514:1" in lines[0] and "L1" in lines[0]
    assert "8.333%" in lines[2] and "8000/6000" in lines[2]
