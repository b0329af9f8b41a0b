"""Rtt cells through the campaign's store path: a cell's rtt experiment is read from its
scratch store and written to the campaign's store once, each run's rtt_runs row (summary,
histograms, probe sample) with its trial in the same transaction; then compared (the
lowest RTT ranked first) and shown on the campaign page."""

from __future__ import annotations

import numpy as np
from tests.integration.test_campaign_accept_store import compare_cells, store_cells

from netassay.campaign import results
from netassay.campaign.worker import CellResult, read_scratch
from netassay.hist import Hist
from netassay.methods.rtt import store
from netassay.store.db import Store
from netassay.trial.record import TrialRecord

FILE = """\
[campaign]
name = "paths"
method = "rtt"
repetitions = 2
seed = 5
[fixed]
runs = 3
count = 200
[factors]
path = ["bridge", "veth"]
"""
BASE_US = {"bridge": 40.0, "veth": 25.0}  # each path's RTT in this synthetic campaign


def _cell(tmp_path, c, slot) -> CellResult:
    base = BASE_US[c.cells[slot.cell]["path"]] * 1e3 + slot.block * 100
    scratch = tmp_path / f"scratch-{slot.position}.db"
    with Store(scratch) as st:
        exp, _ = st.add_experiment(key="r", kind="rtt", source=store.SOURCE, label="l", config={})
        for k in range(3):
            h = Hist()
            h.add(np.full(200, base + 10 * k, dtype=np.int64))
            seg = {"p50_ns": base + 10 * k, "p99_ns": base + 10 * k + 500}
            probes = store.pack_probes(np.ones((2, 3)), ("a", "b", "c"))
            trial = TrialRecord(0, k, 1000.0, 0.2, 200, 199 - k, store.SOURCE)
            store.add_run(st, exp, trial, {"segments": {"rtt": seg}}, {"rtt": h}, probes)
    return CellResult(slot.key(c.name), "camp", "local", 1.0, read_scratch(scratch))


def _campaign(tmp_path):
    return store_cells(tmp_path, FILE, _cell)


def test_each_rtt_cell_is_stored_once_with_its_rtt_runs(tmp_path):
    db, first, again = _campaign(tmp_path)
    assert first == [3, 3, 3, 3] and again == [0, 0, 0, 0]
    with Store(db, readonly=True) as st:
        exps = list(store.rtt_experiments(st))
        assert len(exps) == 4
        runs = store.runs(st, exps[0].id)
        assert [r.repetition for r in runs] == [0, 1, 2]
        assert runs[1].summary["segments"]["rtt"]["p50_ns"] % 1000 == 10
        assert runs[2].hists()["rtt"].n == 200 and runs[0].probes()[0] == ["a", "b", "c"]
        n = st.conn.execute("SELECT count(*) FROM rtt_runs").fetchone()[0]
        assert n == 12  # every run once


def test_rtt_cells_are_compared_lowest_rtt_first(tmp_path):
    result, page = compare_cells(tmp_path, FILE, _cell, ["path"])
    assert result["method"] == "rtt"
    r = next(r for r in result["experiments"] if r["factors"]["path"] == "veth" and r["block"] == 1)
    assert (r["rtt_p50_ns"], r["rtt_p99_ns"], r["runs"]) == (25_010, 25_510, 3)
    assert r["loss_ratio"] == 6 / 600  # 1 + 2 + 3 of 3 x 200 probes lost
    ranked = sorted(result["groups"], key=lambda g: g["rank"])
    assert [g["levels"]["path"] for g in ranked] == ["veth", "bridge"]
    assert [e["metric"] for e in result["effects"]] == ["rtt_p50_ns", "rtt_p99_ns"]
    cmp = result["effects"][0]["comparisons"][0]
    assert cmp["test"] == "Wilcoxon signed-rank" and cmp["hodges_lehmann_ns"] == -15_000
    text = "\n".join(results.text(result))
    assert "#1 path=veth: n=2 RTT p50 25.1 us [25.0 us..25.1 us]" in text
    assert "effect of path on RTT p50" in text and "shift -15.0 us" in text
    html = (tmp_path / "page" / "index.html").read_text()
    assert "RTT p50 (median of runs)" in html and "25.0 us" in html
    assert "#1 path=veth: RTT p50 25.1 us" in page["text"]
