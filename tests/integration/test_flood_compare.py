"""What assess and compare say of stored floods: the golden flood (the router capped at
100 kpps) and a second, slower one written by ``flood.store.record``, side by side."""

from __future__ import annotations

import json

import pytest
from tests.builders import store_with

from netassay.methods.flood import store
from netassay.store.db import Store


def _slower(db) -> int:
    with Store(db) as st:
        exp_id, _ = st.add_experiment(
            key="mrr-slow", kind=store.KIND, source="netassay-testbed", label="slow", config={}
        )
        for i, fwd in enumerate((50_000, 52_000)):
            flood = {
                "saturated": True, "offered_pps": 1_000_000, "sent": 1_000_000,
                "forwarded": fwd, "loss_location": {"sut_egress": 1_000_000 - fwd},
                "duration_s": 1.0,
            }  # fmt: skip
            store.record(st, exp_id, i, flood)
    return exp_id


def test_compare_ranks_a_stores_floods_by_mrr(tmp_path, cli):
    db = store_with(tmp_path / "f.db", store.KIND)
    slow = _slower(db)
    out = cli("compare", "--db", db, "--json", check=True)
    (result,) = [json.loads(out.stdout)]
    rows = {r["label"]: r for r in result["experiments"]}
    assert set(rows) == {"golden flood", "slow"}
    assert rows["golden flood"]["rank"] == 1 and rows["slow"]["rank"] == 2
    assert rows["slow"]["experiment_id"] == slow and rows["slow"]["mrr_pps"] == 51_000
    gold = rows["golden flood"]
    assert abs(gold["mrr_pps"] - 100_000) <= 0.05 * 100_000, gold  # the cap
    assert gold["sut_cap_pps"] == 100_000 and gold["runs"] == 3
    text = cli("compare", "--db", db, check=True).stdout
    assert "#1 golden flood" in text and "#2 slow" in text and "51 kpps" in text


@pytest.mark.slow
def test_assess_shows_each_flood_with_its_mrr_per_run(tmp_path, cli):
    db = store_with(tmp_path / "f.db", store.KIND)
    text = cli("assess", db, check=True).stdout
    assert "golden flood, experiment 1: MRR " in text
    assert "MRR per run: " in text and "lost at sut_egress" in text
    lines = cli("assess", db, "--json", check=True).stdout.splitlines()
    (obj,) = [json.loads(line) for line in lines]
    assert obj["kind"] == "mrr" and obj["verdict"] is None and len(obj["mrr_per_run_pps"]) == 3
