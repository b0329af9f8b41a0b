"""Rates in bit/s and as shares of the line rate on the embedded router, and
the per-size counts of a mix where a soak stores them.

The ground truth is arithmetic: a load written in bit/s at L1 is stored as the frames/s
it converts to with the frame size (64-byte frames take 88 bytes at L1: 2 Mbit/s is
2,840 frames/s, rounded down), and a share of a stated line rate likewise. The router
drops nothing at these loads, so a soak of ``--imix simple`` receives every frame of
every size it sent, and its view says so per size.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.store.db import Store

pytestmark = pytest.mark.system


def test_a_sweep_in_bit_per_second_stores_the_converted_frame_rates(tb_name, tmp_path, cli):
    db = tmp_path / "rates.db"
    res = cli(
        "sweep", "--name", tb_name, "--sut", "router", "--size", "64",
        "--rates", "2Mbps,10Mbps", "--runs", "1", "--duration", "0.5s", "--settle", "0.2s",
        "--no-peak-check", "--db", db, "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    with Store(db, readonly=True) as store:
        (exp,) = list(store.experiments())
        trials = store.trial_records(exp.id)
    # 2e6 / (8 * 88) = 2840.9, 1e7 / (8 * 88) = 14204.5: whole frames/s, rounded down
    assert sorted({t.rate_pps for t in trials}) == [2840.0, 14204.0]
    assert all(not t.excluded and t.sent == t.received > 0 for t in trials)
    rates = exp.metadata["rates"]
    assert rates["written"] == {"--rates": "2Mbps,10Mbps"} and rates["layer"] == "l1"
    view = json.loads(res.stdout)["rates"]["loads"]["--rates"]
    assert [x["rate_pps"] for x in view] == [2840.0, 14204.0]
    assert [x["rate_bps"] for x in view] == [2840 * 704, 14204 * 704]


def test_a_soak_of_a_mix_at_a_share_of_the_line_rate_shows_each_size(tb_name, tmp_path, cli):
    db = tmp_path / "soak.db"
    args = (
        "soak", "--name", tb_name, "--sut", "router", "--imix", "simple", "--rate", "1%",
        "--line-rate", "1G", "--duration", "2s", "--segment-length", "1s", "--no-peak-check",
        "--db", db,
    )  # fmt: skip
    res = cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    # 1% of 1 Gbit/s at L1; the mean frame of 64:7,590:4,1514:1 is 4322/12 B (+24 at L1)
    expect = int(1e7 / (8 * (4322 / 12 + 24)))
    assert out["rate_pps"] == expect == 3253
    assert out["rates"]["line_rate_bps"] == 1e9
    assert out["rates"]["loads"]["--rate"][0]["line_rate_share"] == pytest.approx(0.01, rel=1e-3)
    (load,) = out["imix"]["loads"]
    assert load["rate_pps"] == expect and load["runs"] == 2
    assert load["sent"] == load["received"] > 0
    assert set(load["sizes"]) == {"64", "590", "1514"}
    assert all(n["sent"] == n["received"] > 0 for n in load["sizes"].values())
    text = cli("assess", db)
    assert text.returncode == 0, text.stderr
    assert "frame mix 64:7,590:4,1514:1" in text.stdout
    assert "--rate 1% of 1 Gbit/s (--line-rate) at L1" in text.stdout


def test_a_search_of_a_mix_up_to_a_bit_rate_shows_each_size_at_each_load(tb_name, tmp_path, cli):
    db = tmp_path / "search.db"
    res = cli(
        "search", "--name", tb_name, "--sut", "router", "--imix", "simple", "--goal", "ndr",
        "--max-load", "20Mbps", "--duration-sum", "1s", "--time-cap", "5s", "--no-peak-check",
        "--db", db, "--json",
    )  # fmt: skip
    assert res.returncode in (0, 9), res.stderr  # 9: the time cap, what it found is stored
    out = json.loads(res.stdout)
    top = int(2e7 / (8 * (4322 / 12 + 24)))  # 20 Mbit/s at L1 in the mix's mean frame
    assert out["rates"]["loads"]["--max-load"][0]["rate_pps"] == top == 6507
    loads = out["imix"]["loads"]
    with Store(db, readonly=True) as store:
        (exp,) = list(store.experiments())
        tried = sorted({t.rate_pps for t in store.trial_records(exp.id) if not t.excluded})
    assert [x["rate_pps"] for x in loads] == tried and max(tried) <= top
    for load in loads:  # the router drops nothing this slow: every size arrives
        assert load["sent"] == load["received"] > 0
        assert all(n["sent"] == n["received"] > 0 for n in load["sizes"].values())
    text = cli("assess", db)
    assert text.returncode == 0, text.stderr
    assert "frame mix 64:7,590:4,1514:1" in text.stdout
    assert "--max-load 20Mbps, imix 64:7,590:4,1514:1 (mean 360.2 B)" in text.stdout


def test_a_campaign_in_bit_per_second_sends_each_cell_its_own_frame_rate(tb_name, tmp_path, cli):
    """The same bit rates at L2 in two frame sizes: each cell converts them with its own
    size (64 bytes take 68 at L2, 512 take 516) and sends that many frames/s."""
    spec = tmp_path / "bits.toml"
    spec.write_text(
        '[campaign]\nname = "bits"\n'
        '[fixed]\nrates = "2Mbps,4Mbps"\nlayer = "l2"\nruns = 1\nduration = "0.5s"\n'
        'settle = "0.1s"\npeak_check = false\n'
        "[factors]\nsize = [64, 512]\n"
    )
    plan = cli("campaign", "plan", spec)
    assert plan.returncode == 0, plan.stderr
    assert "size=64  [3.676 kpps..7.352 kpps" in plan.stdout, plan.stdout
    db = tmp_path / "bits.db"
    res = cli("campaign", "run", spec, "--db", db, "--name", tb_name, timeout=300)
    assert res.returncode == 0, res.stderr
    # 2e6 / (8 * 68) = 3676.5, 4e6 / (8 * 68) = 7352.9; 2e6 / (8 * 516) = 484.5, 968.9
    expect = {64: [3676.0, 7352.0], 512: [484.0, 968.0]}
    with Store(db, readonly=True) as store:
        exps = list(store.experiments())
        assert len(exps) == 2
        for exp in exps:
            size = exp.config["testbed"]["size_bytes"]
            trials = store.trial_records(exp.id)
            assert [t.rate_pps for t in trials] == expect[size]
            for t in trials:  # sent at that rate, every frame received
                assert not t.excluded and t.sent == t.received
                assert abs(t.sent - t.rate_pps * t.duration_s) <= 1, t
                assert t.achieved_rate_pps == pytest.approx(t.rate_pps, rel=1e-3)
            rates = exp.metadata["rates"]
            assert rates["written"] == {"--rates": "2Mbps,4Mbps"} and rates["layer"] == "l2"
