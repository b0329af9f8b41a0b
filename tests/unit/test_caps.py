"""A bound above a cap netassay installed (``analysis.caps``): by how much, and how much
of it the cap's policer bucket explains over the trials the bound rests on."""

from __future__ import annotations

import pytest

from netassay.analysis.caps import Cap, above_cap
from netassay.shared import lab
from netassay.testbed import topology


def test_a_search_above_its_200k_cap_is_the_policers_bucket_over_1s_trials():
    # the embedded testbed's cap of 200 kpps: a policer whose bucket holds 20 ms of it
    bucket = topology.cap_bucket_of(200_000)
    assert bucket == 4000
    x = above_cap("NDR", 203_500.0, [Cap("--sut-cap", 200_000.0, bucket)], 1.0)
    assert x is not None
    assert x.excess_pps == pytest.approx(3500) and x.share == pytest.approx(0.0175)
    assert x.bucket_pps == pytest.approx(4000)  # 4,000 frames on top of 1 s at the rate
    assert x.explained
    line = x.line()
    assert line.startswith("NDR 203.5 kpps is 3.5 kpps (1.75%) above the cap netassay set "
                           "(--sut-cap 200 kpps)")  # fmt: skip
    assert "full bucket of 4,000 frames" in line and "up to 4 kpps (2.00%) more" in line
    assert "loads up to 204 kpps lose nothing" in line
    doc = x.to_json()
    assert doc["excess_pps"] == pytest.approx(3500) and doc["explained_by_bucket"] is True
    assert doc["bucket_pkts"] == 4000 and doc["trial_duration_s"] == 1.0


def test_a_pdr_above_the_cap_is_the_bucket_and_the_loss_its_goal_allows():
    # measured: search --sut-cap 200k, PDR@0.5% lower bound 204.5 kpps (542 of 204,531
    # frames lost over 1 s: the policer passed 204,000 = 200k x 1 s + its 4,000 frames)
    cap = [Cap("--sut-cap", 200_000.0, 4000)]
    x = above_cap("PDR@0.5%", 204_531.0, cap, 1.0, loss_ratio=0.005)
    assert x is not None and x.explained
    assert x.lossless_pps == pytest.approx(204_000)
    assert x.limit_pps == pytest.approx(204_000 / 0.995)  # 205.03 kpps lose at most 0.5%
    assert "loads up to 204 kpps lose nothing and up to 205 kpps lose at most 0.50%" in x.line()
    assert x.to_json()["goal_loss_ratio"] == 0.005
    # the same rate as an NDR (no loss allowed) is more than the bucket explains
    assert not above_cap("NDR", 204_531.0, cap, 1.0).explained


def test_longer_trials_leave_less_room_and_more_than_the_bucket_is_said_as_such():
    cap = [Cap("--sut-cap", 200_000.0, 4000)]
    x = above_cap("NDR", 203_500.0, cap, 10.0)  # 10 s trials: the bucket adds 400 pps
    assert x is not None and not x.explained
    assert "more than its bucket explains" in x.line()
    assert above_cap("NDR", 200_000.0, cap, 1.0) is None  # at the cap: nothing to say
    assert above_cap("NDR", 150_000.0, cap, 1.0) is None
    assert above_cap("NDR", None, cap, 1.0) is None
    assert above_cap("NDR", 250_000.0, [], 1.0) is None  # no cap netassay set


def test_a_bound_in_bit_per_second_says_its_excess_so_too():
    rates = {"layer": "l1", "bits_per_frame": {"l1": 672.0, "l2": 512.0}}
    x = above_cap("PDR@0.5%", 203_500.0, [Cap("--sut-cap", 200_000.0, 4000)], 1.0, rates)
    assert x is not None and x.to_json()["excess_bps"] == pytest.approx(3500 * 672)
    assert "(1.75%, 2.352 Mbit/s at L1)" in x.line()


def test_the_caps_of_an_experiment_one_way_and_both_ways():
    meta = {"sut_cap_pps": 200_000.0, "sut_cap_bucket_pkts": 4000,
            "sut_cap_reverse_pps": 50_000.0, "sut_cap_reverse_bucket_pkts": 1000}  # fmt: skip
    # one direction: the forward cap alone binds (the reverse one is on the other egress)
    assert lab.installed_caps(meta, bidirectional=False) == [Cap("--sut-cap", 200_000.0, 4000)]
    both = lab.installed_caps(meta, bidirectional=True)
    assert both == [
        Cap("--sut-cap", 200_000.0, 4000, 2),
        Cap("--sut-cap-reverse", 50_000.0, 1000, 2),
    ]
    # both directions at once, each half the aggregate: the reverse cap binds at twice itself
    x = above_cap("NDR", 101_000.0, both, 1.0)
    assert x is not None and x.cap.flag == "--sut-cap-reverse" and x.excess_pps == 1000
    assert x.bucket_pps == 2000 and x.explained  # each direction's bucket
    # a store from before the bucket was recorded: as netassay sizes it
    assert lab.installed_caps({"sut_cap_pps": 100_000.0}, False) == [Cap("--sut-cap", 1e5, 2000)]
    assert lab.installed_caps({"sut_cap_pps": None}, False) == []
