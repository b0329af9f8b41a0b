"""A flood as it is stored (kind mrr) and summarized: one trial per flood, the loss split
as every trial stores it, the MRR per run and over the runs, on a real SQLite store."""

from __future__ import annotations

import math

import pytest

from netassay.methods.flood import store
from netassay.shared.flood_record import NOT_SATURATED
from netassay.store.db import Store


def _flood(forwarded: int, secs: float = 1.0, *, saturated: bool = True) -> dict:
    sent = 1_500_000
    lost = sent - forwarded
    loss = {"sut_ingress": lost // 4, "sut_egress": lost - lost // 4} if saturated else {}
    return {
        "saturated": saturated, "offered_pps": round(sent / secs),
        "forwarded_pps": round(forwarded / secs), "sent": sent, "forwarded": forwarded,
        "program_forwarded": None, "loss_location": loss, "duration_s": secs,
        "cpu": {"cpu0": {"busy": 0.99, "idle": 0.01}}, "deltas": {"sink/xdp/packets": forwarded},
    }  # fmt: skip


@pytest.fixture
def db(tmp_path):
    with Store(tmp_path / "f.db") as st:
        exp_id, _ = st.add_experiment(
            key="mrr-t", kind=store.KIND, source="netassay-testbed", label="t", config={}
        )
        yield st, exp_id


def test_each_flood_is_one_trial_with_its_counts_loss_and_cpu(db):
    st, exp_id = db
    for i, fwd in enumerate((100_000, 102_000, 101_000)):
        store.record(st, exp_id, i, _flood(fwd), run_id=None)
    trials = st.trials(exp_id)
    assert [t["repetition"] for t in trials] == [0, 1, 2]
    t = trials[1]
    assert (t["sent"], t["received"], t["duration_s"]) == (1_500_000, 102_000, 1.0)
    assert t["rate_pps"] == t["achieved_rate_pps"] == 1_500_000
    assert t["loss_location"] == {"sut_ingress": 349_500, "sut_egress": 1_048_500}
    assert t["sent"] == t["received"] + sum(t["loss_location"].values())
    assert t["cpu"] == {"cpu0": {"busy": 0.99, "idle": 0.01}}
    assert t["counters"]["flood"]["saturated"] is True
    assert t["counters"]["deltas"] == {"sink/xdp/packets": 102_000}
    assert t["warnings"] == [] and t["excluded"] is None
    assert [e.kind for e in store.mrr_experiments(st)] == ["mrr"]


def test_the_summary_is_the_median_mrr_with_its_range_and_ci(db):
    st, exp_id = db
    for i, (fwd, secs) in enumerate(((100_000, 1.0), (204_000, 2.0), (101_000, 1.0))):
        store.record(st, exp_id, i, _flood(fwd, secs))
    (exp, s), *rest = list(store.stored_floods(st))
    assert not rest and exp.id == exp_id
    assert s["mrr_per_run_pps"] == [100_000.0, 102_000.0, 101_000.0]  # per second of flood
    assert s["mrr_pps"] == 101_000.0
    assert (s["mrr_min_pps"], s["mrr_max_pps"]) == (100_000.0, 102_000.0)
    lo, hi = s["mrr_ci95_pps"]  # mean 101k, sd 1k, t(2, 0.975) = 4.303
    assert math.isclose(hi - 101_000, 4.302653 * 1_000 / math.sqrt(3), rel_tol=1e-5)
    assert math.isclose(lo + hi, 202_000)
    assert s["runs"] == 3 and s["unsaturated"] == 0 and s["lower_bound"] is False
    assert s["loss_location"]["sut_egress"] > s["loss_location"]["sut_ingress"] > 0
    assert math.isclose(s["loss_ratio"], 1 - 405_000 / 4_500_000)


def test_a_flood_the_sut_lost_nothing_of_is_a_lower_bound_not_a_fault(db):
    st, exp_id = db
    store.record(st, exp_id, 0, _flood(1_500_000, saturated=False))
    (t,) = st.trials(exp_id)
    assert t["warnings"][0].startswith(NOT_SATURATED) and t["excluded"] is None
    s = store.summary(st.trials(exp_id))
    assert s["unsaturated"] == 1 and s["lower_bound"] is True
    assert s["mrr_ci95_pps"] is None  # one run: no interval
    assert s["loss_ratio"] == 0.0


def test_no_floods_summarize_to_nothing():
    s = store.summary([])
    assert s["runs"] == 0 and s["mrr_pps"] is None and s["loss_ratio"] is None


def test_an_mrr_ci_reaching_below_zero_is_said_to_bound_nothing():
    from netassay.methods.flood.view import ci_text

    assert ci_text([250_000.0, 260_000.0], 3) == "95% CI 250 kpps .. 260 kpps"
    wide = ci_text([-122_900.0, 789_200.0], 2)
    assert wide.startswith("95% CI -122.9 kpps .. 789.2 kpps") and "do not bound the MRR" in wide
