"""The generator outruns the kernel router (napi receive mode, XDP live frames): a sweep
with no loads passes the router's saturation, live frames are counted as exactly as
socket buffers, and half the router's MRR loses nothing the router did not lose."""

from __future__ import annotations

import json

import pytest

from netassay.config import TestbedConfig
from netassay.testbed import Testbed
from netassay.trial.engine import measure, trials_on
from netassay.trial.flood import flood, flood_path

pytestmark = pytest.mark.system


def test_a_sweep_given_no_loads_goes_past_the_routers_saturation_and_finds_it(
    cli, tb_name, tmp_path, stored
):
    """The uncapped kernel router: a flood measures its MRR, the loads go to 1.3x it, no
    trial is a generator limit, and PASTRAMI's rule finds where saturation starts."""
    db = tmp_path / "s.db"
    res = cli(
        "sweep", "--name", tb_name, "--runs", "2", "--duration", "1s", "--settle", "0.2s",
        "--db", str(db), "--json", timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    auto = out["auto_loads"]
    print(f"MRR {auto['mrr_pps']:.0f} pps, reach {auto['reach_pps']:.0f}, verdict "
          f"{out['verdict']}: {out['reason']}")  # fmt: skip
    assert auto["saturated"] is True, auto  # the flood overloaded the router
    assert not auto.get("generator_bound"), auto  # the generator paced 1.3x the MRR
    assert auto["top_pps"] == pytest.approx(1.3 * auto["mrr_pps"], rel=1e-6)
    _, trials = stored(db)
    assert len(trials) == 24
    limits = [t["excluded"] for t in trials if (t["excluded"] or "").startswith("generator limit")]
    assert limits == [], limits
    assert max(t["rate_pps"] for t in trials) >= 1.29 * auto["mrr_pps"]
    assert out["verdict"] in ("GOOD", "BAD"), out["reason"]  # saturation found, not beyond
    techniques = {t["counters"]["generator"]["technique"] for t in trials}
    assert techniques == {"xdp_live_frames"}
    shown = cli("assess", str(db), timeout=120)
    assert shown.returncode == 0, shown.stderr  # the schedule the trials kept, said
    assert "schedule: xdp_live_frames: batches of " in shown.stdout, shown.stdout
    assert "catch-up at most 2x; p99.9 lateness up to " in shown.stdout, shown.stdout


@pytest.mark.parametrize("mode", ["napi", "backlog"])
def test_each_receive_mode_counts_every_frame_at_a_low_load(tb_name, mode):
    """50 and 150 kpps through the router in either mode: sent == counted, no loss,
    sent with the technique the mode names."""
    cfg = TestbedConfig(rx_mode=mode)
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        for rate in (50_000, 150_000):
            rec = measure(ctx, 0, 0, rate, 1.0)
            technique = rec.counters["generator"]["technique"]
            assert technique == ("xdp_live_frames" if mode == "napi" else "af_packet_sendmmsg")
            assert rec.sent == rate and rec.received == rec.sent, (rec.loss_location, rec.warnings)
            if mode == "napi":
                g = rec.counters["generator"]
                assert g["catch_up"] == 2.0
                assert g["spacing_ns"] == pytest.approx(1e9 / rate, rel=1e-4)


def test_no_false_loss_at_half_the_mrr_three_million_frames(tb_name):
    """The router's MRR by a flood, then 3 x 1e6 frames at half of it: received ==
    sent. Unpinned (the SUT's poll runs inside the generator's send call, so this VM
    taking the SUT's CPU away cannot drop: what is tested is that live frames, their
    pacing and the catch-up after a stall of the generator cost no frame)."""
    cfg = TestbedConfig(pinning="unpinned", sink="xdp+nft")
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        with flood_path(tb):
            mrr = flood(ctx, 1.0)["forwarded_pps"]
        half = round(mrr / 2, -3)
        print(f"MRR {mrr} pps; trials at {half}")
        sent = received = kept = 0
        for k in range(6):  # a trial the host spoiled (a stall: the generator's) again,
            rec = measure(ctx, 0, k, half, 1e6 / half)  # as a sweep repeats it
            assert rec.counters["deltas"]["sink/nft/na_rx/packets"] == rec.received
            if rec.excluded:
                assert rec.excluded.startswith(("generator limit", "generator stall")), rec
                continue
            sent += rec.sent
            received += rec.received
            kept += 1
            assert {loc: n for loc, n in rec.loss_location.items() if n} == {}
            if kept == 3:
                break
        assert kept == 3 and sent == received and abs(sent - 3_000_000) <= 3
