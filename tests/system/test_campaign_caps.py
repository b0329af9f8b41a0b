"""A 2 x 2 campaign of ground truths (two caps x two pinnings) on the in-process
LocalCluster: four experiments, each PDR@0.5% within 5% of its cap, per-core CPU use
with every trial, and 'compare --by cap' ranks the caps right.

Needs root and netassay-gen (skipped with the reason otherwise; CI runs them).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from netassay.store.db import Store

pytestmark = pytest.mark.system

CAPS = {"50k": 50_000, "80k": 80_000}


@pytest.mark.slow
def test_two_caps_by_two_pinnings(tb_name, tmp_path, cli, netns_of):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("pin-2cpu needs two CPUs")
    spec = tmp_path / "caps.toml"
    spec.write_text(
        '[campaign]\nname = "gt"\nrepetitions = 1\n'
        '[fixed]\nrates = "48k,50k,52k,76k,80k,82k"\nruns = 1\n'
        'duration = "1s"\nsettle = "0.1s"\n'
        '[factors]\nsut_cap = ["50k", "80k"]\npinning = ["unpinned", "pin-2cpu"]\n'
    )
    db = tmp_path / "camp.db"
    plan = cli("campaign", "plan", str(spec))
    assert plan.returncode == 0, plan.stderr
    assert "cells: 4 (full factorial) x 1 repetition(s) = 4 experiments" in plan.stdout
    res = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "4 of 4 cells stored" in res.stdout
    assert "[cells 4/4] [trials 24/24]" in res.stderr  # the campaign's progress
    assert re.search(r"; dashboard http://127\.0\.0\.1:\d+/status", res.stderr), res.stderr
    assert netns_of(tb_name) == []  # every cell removed its testbed

    out = cli("compare", "--db", str(db), "--by", "cap", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    exps = result["experiments"]
    assert len(exps) == 4
    for e in exps:
        cap = CAPS[e["factors"]["sut_cap"]]
        assert abs(e["pdr_pps"] - cap) <= 0.05 * cap, e
        assert set(e["cpu_busy"]) >= {"cpu0", "cpu1"}, e
    ranks = {g["levels"]["sut_cap"]: g["rank"] for g in result["groups"]}
    assert ranks == {"80k": 1, "50k": 2}
    effect = result["effects"][0]
    assert effect["factor"] == "sut_cap" and effect["comparisons"][0]["cliffs_delta"] == 1.0
    with Store(db, readonly=True) as st:
        for e in st.experiments():
            assert e.metadata["campaign"]["campaign"] == "gt"
            assert all(t["cpu"] for t in st.trials(e.id))  # CPU use with every trial
    text = cli("compare", "--db", str(db), "--by", "cap")
    assert "#1 sut_cap=80k" in text.stdout and "Mann-Whitney U" in text.stdout


@pytest.mark.slow
def test_a_search_cell_finds_its_cap(tb_name, tmp_path, cli):
    """A search campaign's cell runs 'netassay search': its PDR@0.5% is the cap as a 1 s
    trial sees it (C + bucket / T, see test_search_ground_truth)."""
    from netassay.testbed.topology import CAP_BUCKET_S

    spec = tmp_path / "search.toml"
    spec.write_text(
        '[campaign]\nname = "sgt"\nmethod = "search"\n[fixed]\npinning = "unpinned"\n'
        'goals = ["ndr", "pdr:0.005"]\nmax_load = "120k"\npeak_check = false\n'
        'final_duration = "1s"\nduration_sum = "2s"\ntime_cap = "3m"\n'
        '[factors]\nsut_cap = ["60k"]\n'
    )
    db = tmp_path / "s.db"
    res = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, timeout=600)
    assert res.returncode == 0, res.stderr
    out = json.loads(cli("compare", "--db", str(db), "--json").stdout)
    (e,) = out["experiments"]
    truth = 60_000 * (1 + CAP_BUCKET_S / 1.0)
    assert e["kind"] == "search" and abs(e["pdr_pps"] - truth) <= 0.05 * truth, e
