"""netassay flood --db stores what it measures (kind mrr, one trial per flood) and the
stored MRR is the ground truth: a kernel router capped at 100 kpps floods at its cap
(the policer's bucket adds 2% over 1 s). assess, compare, export and report read the
store; a 2-cell flood campaign over two caps ranks them right.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.store.db import Store

pytestmark = pytest.mark.system

CAP_PPS = 100_000


def _near(mrr: float, cap: float) -> bool:
    return abs(mrr - cap) <= 0.05 * cap


@pytest.mark.slow
def test_a_stored_flood_finds_the_cap(tb_name, tmp_path, cli, netns_of):
    db = tmp_path / "f.db"
    res = cli(
        "flood", "--name", tb_name, "--sut", "router", "--sut-cap", "100k", "--duration", "1s",
        "--runs", "3", "--db", db, "--label", "capped", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["db"] == str(db) and out["experiment_id"] == 1
    assert netns_of(tb_name) == []  # the testbed it built is gone
    with Store(db, readonly=True) as st:
        (exp,) = st.experiments()
        trials = st.trials(exp.id)
    assert exp.kind == "mrr" and exp.label == "capped" and exp.metadata["sut_cap_pps"] == CAP_PPS
    assert len(trials) == 3 and all(t["cpu"] for t in trials)
    for t, f in zip(trials, out["floods"], strict=True):
        assert (t["sent"], t["received"]) == (f["sent"], f["forwarded"])
        assert t["sent"] == t["received"] + sum(t["loss_location"].values()), t
    (a,) = [json.loads(line) for line in cli("assess", db, "--json").stdout.splitlines()]
    print(f"MRR {a['mrr_pps']:.0f} pps per run {a['mrr_per_run_pps']} against cap {CAP_PPS}")
    assert _near(a["mrr_pps"], CAP_PPS), a
    assert all(_near(v, CAP_PPS) for v in a["mrr_per_run_pps"]), a
    assert a["lower_bound"] is False and a["loss_location"].get("sut_egress", 0) > 0, a
    compared = json.loads(cli("compare", "--db", db, "--json").stdout)
    assert compared["experiments"][0]["mrr_pps"] == a["mrr_pps"]
    rows = cli("export", "--db", db, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(r)["experiment_kind"] for r in rows] == ["mrr"] * 3
    rep = cli("report", db, "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    assert "flood (MRR): capped" in (tmp_path / "rep" / "index.html").read_text()


@pytest.mark.slow
def test_a_flood_campaign_ranks_two_caps(tb_name, tmp_path, cli, netns_of):
    spec = tmp_path / "flood.toml"
    spec.write_text(
        '[campaign]\nname = "fl"\nmethod = "flood"\n'
        '[fixed]\nsut = "router"\nruns = 2\nduration = "1s"\n'
        '[factors]\nsut_cap = ["30k", "50k"]\n'
    )
    db = tmp_path / "camp.db"
    res = cli("campaign", "run", spec, "--db", db, "--name", tb_name, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "2 of 2 cells stored" in res.stdout, res.stdout
    assert netns_of(tb_name) == []
    result = json.loads(cli("compare", "--db", db, "--json").stdout)
    assert result["method"] == "flood"
    for e in result["experiments"]:
        cap = {"30k": 30_000, "50k": 50_000}[e["factors"]["sut_cap"]]
        print(f"cell cap {cap}: MRR {e['mrr_pps']:.0f} pps, lost {e['loss_ratio']:.3f}")
        assert e["kind"] == "mrr" and e["runs"] == 2 and _near(e["mrr_pps"], cap), e
    ranks = {g["levels"]["sut_cap"]: g["rank"] for g in result["groups"]}
    assert ranks == {"50k": 1, "30k": 2}
    text = cli("compare", "--db", db).stdout
    assert "#1 sut_cap=50k" in text and "effect of sut_cap on MRR" in text, text
    rep = cli("report", db, "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    pages = [p.read_text() for p in (tmp_path / "rep").rglob("index.html")]
    assert any("MRR (median of runs)" in p for p in pages)
