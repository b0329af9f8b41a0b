"""examples/kit2-capped.toml and examples/kit2-capped-recovery.toml as written: burst and
recovery as campaigns over two data planes, the kernel router and Open vSwitch, each
behind the same known cap (``--sut-cap 30k``), and each cell against its ground truth:

- burst at R_b = 100 kpps: the longest burst without loss is B / (1 - C / R_b), B the
  cap's bucket (the router's nft policer: 20 ms of the cap, 600 frames; Open vSwitch's
  meter: its AF_XDP ring, 2,048 frames: ``topology.cap_bucket_pkts``), and the frames the
  SUT held (RFC 9004's corrected buffer time times R_b) are B;
- recovery, 2 s at 1.1 C then 0.55 C: a policer and a meter queue nothing, so each cell
  recovers at once (within two sampling intervals), and a trial loses its excess less
  the bucket, 0.1 C x 2 s - B, within 1% of the overload either way (a stall at the
  overload's start or end moves a few tokens: tests/system/test_dataplane_methods.py).

Needs root, netassay-gen and Open vSwitch (make setup); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netassay.config import TestbedConfig
from netassay.errors import NetassayError
from netassay.testbed import dataplane, topology

pytestmark = pytest.mark.system

EXAMPLES = Path(__file__).parents[2] / "examples"
CAP, R_B, INTERVAL_S = 30_000, 100_000, 0.01
SUTS = ("router", "ovs")


def _bucket(sut: str) -> int:
    b = topology.cap_bucket_pkts(TestbedConfig(sut=sut, sut_cap_pps=CAP))
    assert b is not None
    return b


def _assessed(cli, db: Path, campaign: str) -> dict[str, dict]:
    """Each cell's assessment (``assess --json``) of one campaign, by its data plane."""
    res = cli("assess", str(db), "--json")
    assert res.returncode == 0, res.stderr
    found = [json.loads(x) for x in res.stdout.splitlines()]
    return {a["label"].split("sut=")[1].split()[0]: a for a in found
            if a["label"].startswith(f"{campaign} ")}  # fmt: skip


@pytest.mark.slow
def test_burst_and_recovery_campaigns_over_two_data_planes_meet_their_caps(
    tb_name, tmp_path, cli, netns_of
):
    try:
        dataplane.validate(TestbedConfig(sut="ovs"))
    except NetassayError as exc:
        pytest.skip(exc.line())
    db = tmp_path / "kit2.db"
    for spec in ("kit2-capped.toml", "kit2-capped-recovery.toml"):
        res = cli("campaign", "run", str(EXAMPLES / spec), "--db", str(db), "--name", tb_name,
                  timeout=600)  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert "2 of 2 cells stored" in res.stdout, res.stdout
        assert netns_of(tb_name) == []
    bursts = _assessed(cli, db, "kit2-capped")
    assert sorted(bursts) == sorted(SUTS)
    for sut, a in bursts.items():
        truth = _bucket(sut) / (1 - CAP / R_B)
        print(sut, {k: a[k] for k in ("per_test", "mean_frames", "buffered_frames")}, truth)
        assert a["tests"] == 5 and a["at_limit"] == 0
        assert abs(a["mean_frames"] - truth) <= 0.05 * truth, (sut, a["per_test"])
        assert abs(a["buffered_frames"] - _bucket(sut)) <= 0.05 * _bucket(sut), sut
    recoveries = _assessed(cli, db, "kit2-capped-recovery")
    assert sorted(recoveries) == sorted(SUTS)
    for sut, a in recoveries.items():
        lost_truth = 0.1 * CAP * 2 - _bucket(sut)
        print(sut, a["per_trial"], lost_truth)
        held = [
            t["recovery_s"] is not None and t["recovery_s"] <= 2 * INTERVAL_S
            and abs(t["lost"] - lost_truth) <= 0.01 * 1.1 * CAP * 2
            for t in a["per_trial"] if not t["excluded"]
        ]  # fmt: skip
        assert sum(held) >= 2, (sut, a["per_trial"])  # (a busy host may spoil one trial)
    for campaign, metric in (("kit2-capped", "longest lossless burst"),
                             ("kit2-capped-recovery", "recovery time")):  # fmt: skip
        out = cli("compare", "--db", str(db), "--campaign", campaign)
        assert out.returncode == 0, out.stderr
        assert "sut=router" in out.stdout and "sut=ovs" in out.stdout
        assert metric in out.stdout
