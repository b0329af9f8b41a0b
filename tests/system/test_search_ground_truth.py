"""netassay search against the ground-truth capacity cap on a real kernel (root).

The cap is an nft policer of C pps with a bucket of 20 ms of traffic (CAP_BUCKET_S): a
trial of T seconds that starts with a full bucket passes C * T + bucket frames, so
what a 1 s trial can forward without loss is C + bucket / T, the truth the search must
find. The generator runs unpinned (as the sweep's ground-truth test does): the cap,
not the machine, limits the load.
"""

from __future__ import annotations

import json

import pytest

from netassay.store.db import Store
from netassay.testbed.topology import CAP_BUCKET_S

pytestmark = pytest.mark.system

CAP = 60_000


@pytest.mark.slow
def test_search_finds_the_cap_in_little_trial_time_and_pastrami_verifies_it(
    tb_name, tmp_path, cli, netns_of
):
    db = tmp_path / "search.db"
    res = cli(
        "search", "--name", tb_name, "--sut-cap", "60k", "--pinning", "unpinned",
        "--max-load", "120k", "--final-duration", "1s", "--duration-sum", "3s",
        "--then-verify", "--verify-runs", "2", "--db", str(db), "--json",
        "--fail-on", "inconclusive", timeout=240,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr  # its verify GOOD: --fail-on lets it pass
    out = json.loads(res.stdout)
    truth = CAP * (1 + CAP_BUCKET_S / 1.0)  # C + bucket / T for 1 s trials
    goals = {g["goal"]: g for g in out["goals"]}
    pdr, ndr = goals["pdr:0.005"], goals["ndr"]
    assert abs(pdr["conditional_throughput_pps"] - truth) <= 0.02 * truth, (pdr, res.stderr)
    assert abs(pdr["conditional_throughput_pps"] - CAP) <= 0.05 * CAP, pdr
    assert pdr["relevant_lower_bound_pps"] <= truth / (1 - 0.005) * 1.02
    assert ndr["relevant_lower_bound_pps"] <= pdr["relevant_lower_bound_pps"]
    assert ndr["relevant_lower_bound_pps"] <= truth * 1.01  # NDR is below the cap
    assert out["complete"] and pdr["reached"] and ndr["reached"]
    # a fraction of a PASTRAMI sweep's trial time: a sweep resolving 0.5% over the same
    # range would need hundreds of loads
    assert out["trial_time_s"] <= 40, out
    assert out["wall_time_s"] <= out["trial_time_s"] + out["attempts"] * 1.5, out
    v = out["verify"]
    assert v["verdict"] == "GOOD", (v, res.stderr)
    assert v["verified"] and min(v["rates_pps"]) < truth < max(v["rates_pps"])

    with Store(db) as st:
        exps = {e.kind: e for e in st.experiments()}
        assert set(exps) == {"search", "sweep"}
        trials = st.trials(exps["search"].id)
    assert len(trials) == out["trials"]
    assert all(t["counters"]["search"]["goals"]["pdr:0.005"]["load"] for t in trials)
    assert len({(t["load_index"], t["repetition"]) for t in trials}) == len(trials)
    assert netns_of(tb_name) == []  # the testbed the search built is down again

    assessed = cli("assess", str(db), "--json")
    assert assessed.returncode == 0, assessed.stderr
    objs = [json.loads(line) for line in assessed.stdout.splitlines()]
    kinds = sorted(o.get("kind", "sweep") for o in objs)
    assert kinds == ["search", "sweep"]
    again = next(o for o in objs if o.get("kind") == "search")
    assert again["goals"] == out["goals"]  # replayed from the store: the same result


@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_search_stopped_by_its_time_cap_resumes_to_the_same_answer(tb_name, tmp_path, cli):
    """A time cap too short for the search: exit 9 with the trials stored and the bounds
    so far; --resume (with a longer cap: the cap holds for each run) replays them into
    MLRsearch and measures only what is missing."""
    db = tmp_path / "cap.db"
    first = cli(
        "search", "--name", tb_name, "--sut-cap", "60k", "--pinning", "unpinned",
        "--max-load", "120k", "--duration-sum", "3s", "--time-cap", "6s", "--no-peak-check",
        "--db", str(db), "--json",
    )  # fmt: skip
    assert first.returncode == 9, first.stderr
    assert "time cap" in first.stderr.strip().splitlines()[-1]
    part = json.loads(first.stdout)
    assert not part["complete"] and part["stop"]["kind"] == "time cap"
    assert 1 <= part["trials"] <= 8

    res = cli("search", "--db", str(db), "--resume", "--time-cap", "3m", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["complete"] and out["trials"] > part["trials"]
    pdr = {g["goal"]: g for g in out["goals"]}["pdr:0.005"]
    truth = CAP * (1 + CAP_BUCKET_S / 1.0)
    assert abs(pdr["conditional_throughput_pps"] - truth) <= 0.02 * truth, pdr
    with Store(db) as st:
        (exp,) = st.experiments()
        runs = st.runs(exp.id)
        trials = st.trials(exp.id)
    assert [r["resumed"] for r in runs] == [False, True]
    assert len(trials) == out["trials"]
    assert sorted(t["counters"]["search"]["trial"] for t in trials) == list(
        range(1, len(trials) + 1)
    )
