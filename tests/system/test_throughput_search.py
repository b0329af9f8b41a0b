"""``--throughput search`` against a ground truth on the kernel router (root, real
namespaces, real traffic): a tbf of rate R with a queue of a few frames on the SUT's
egress is the SUT's throughput; recovery measures it first by a short search (the
search method run through the registry on recovery's open testbed), so its PDR@0.5% is
R to within the goal's width and the queue's share of a trial, the recovery's overload
is 110% of it, and the search is stored after the recovery's own experiment, which
names it (a campaign cell's first experiment stays the method's).

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest
from tests.system.droprule import sut_tbf

from netassay.store.db import Store

pytestmark = pytest.mark.system

# the tbf: 64-byte frames at R/s, a bucket of K frames (at least R over the kernel's
# tick: a smaller bucket caps the rate below R), a queue of Q frames
R, K, Q = 30_000, 400, 20


@pytest.mark.slow
def test_recovery_takes_its_throughput_from_a_search_run_first_on_its_testbed(
    tb_name, tmp_path, cli
):
    db = tmp_path / "r.db"
    assert cli("testbed", "up", "--name", tb_name, "--sut", "router").returncode == 0
    try:
        sut_tbf(tb_name, R, Q, K)
        res = cli(
            "recovery", "--name", tb_name, "--throughput", "search", "--overload-time", "1s",
            "--recover-time", "1s", "--interval", "10ms", "--trials", "2", "--wait", "0.5s",
            "--no-peak-check", "--db", db, "--json",
        )  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    with Store(db, readonly=True) as st:
        exps = list(st.experiments())
    assert [e.kind for e in exps] == ["recovery", "search"]  # the method's own first
    rec, search = exps
    src = rec.config["throughput_from"]
    assert src["search_experiment"] == search.id and src["measured"] is True
    assert src["goal"] == "pdr:0.005"
    pdr = src["pdr_pps"]
    print({"pdr_pps": pdr, "truth": R, "overload_pps": out["overload_pps"]})
    # the width (2%), and the bucket and queue (K + Q frames, 1.4% of a 1 s trial) apart
    assert abs(pdr - R) <= 0.05 * R, pdr
    assert out["overload_pps"] == pytest.approx(1.1 * pdr)
    assert search.label == f"search for the throughput of {tb_name}"
    assessed = [
        json.loads(x) for x in cli("assess", db, "--json", check=True).stdout.split("\n") if x
    ]
    found = [a for a in assessed if a.get("kind") == "search"]
    assert found and found[0]["experiment_id"] == search.id
