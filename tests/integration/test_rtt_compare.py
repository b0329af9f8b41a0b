"""netassay compare --db on rtt runs (a store written with synthetic runs; no root needed):
configurations, tests and effect sizes, the trend against the load count, the report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from netassay.hist import Hist
from netassay.methods.rtt import store
from netassay.methods.rtt.run import RttSetup
from netassay.methods.rtt.trial import SAMPLE_COLUMNS
from netassay.store.db import Store
from netassay.traffic.load import Load
from netassay.trial.record import TrialRecord


def _experiment(st: Store, path: str, load: str, rtt_us: float, runs: int, seed: int) -> None:
    req = RttSetup(path=path, load=Load.parse(load))
    exp_id, _ = st.add_experiment(key=f"rtt-{path}-{load}-{seed}", kind=store.KIND,
                                  source=store.SOURCE, label="", config=req.factors())  # fmt: skip
    rng = np.random.default_rng(seed)
    for i in range(runs):
        hists = {}
        for seg, scale in (("rtt", 1.0), ("response", 0.3), ("overhead", 0.2), ("wire", 0.1)):
            h = Hist()
            h.add((rng.normal(rtt_us * scale * 1000, 300, 1000)).astype(np.int64))
            hists[seg] = h
        summary = {"run": i, "segments": {k: h.summary() for k, h in hists.items()},
                   "cpu": {"cpu0": {"user": 0.1, "system": 0.2, "softirq": 0.05, "irq": 0.0,
                                    "steal": 0.0, "idle": 0.65, "busy": 0.35}}}  # fmt: skip
        trial = TrialRecord(load_index=0, repetition=i, rate_pps=1000.0, duration_s=1.0,
                            sent=1000, received=1000, source=store.SOURCE)  # fmt: skip
        probes = store.pack_probes(
            np.zeros((3, len(SAMPLE_COLUMNS)), dtype=np.uint64), SAMPLE_COLUMNS
        )
        store.add_run(st, exp_id, trial, summary, hists, probes)


@pytest.fixture(scope="module")
def rtt_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("cmp") / "rtt.db"
    with Store(db) as st:
        _experiment(st, "bridge", "none", 60, 6, 1)
        _experiment(st, "bridge", "cpu:8@sender", 90, 6, 2)
        _experiment(st, "bridge", "cpu:32@sender", 150, 6, 3)
        _experiment(st, "macvlan", "none", 58, 6, 4)
    return db


def test_compare_by_path_and_load(cli, rtt_db):
    res = cli("compare", "--db", rtt_db, "--by", "path", "--by", "load", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    labels = [c["configuration"] for c in out["configurations"]]
    assert labels == ["path=bridge load=none", "path=bridge load=cpu:8@sender",
                      "path=bridge load=cpu:32@sender", "path=macvlan load=none"]  # fmt: skip
    first = out["configurations"][0]["rtt"]
    assert first["runs"] == 6 and abs(first["median"] - 60_000) < 500
    lo, hi = first["ci95"]
    assert lo <= first["median"] <= hi
    mw = [t for t in out["pairwise"] if t["segment"] == "rtt"]
    loaded = next(t for t in mw if t["a"] == "path=bridge load=cpu:32@sender")
    assert loaded["test"] == "Mann-Whitney U" and loaded["p"] < 0.01
    assert loaded["cliffs_delta"] == 1.0 and loaded["effect"] == "large"
    assert abs(loaded["hodges_lehmann"] - 90_000) < 1000
    (trend,) = [t for t in out["trends"] if t["segment"] == "rtt"]
    assert trend["load"] == "cpu@sender" and trend["tau_b"] > 0.7 and trend["p"] < 0.001
    assert trend["n"] == 18  # 6 runs each at 0, 8 and 32 loads


def test_sender_side_against_responder_side_paired_by_run(cli, rtt_db):
    """Overhead is 0.2 x RTT and response 0.3 x RTT in every synthetic run: the
    sender side is smaller in all 6 runs, so Wilcoxon's exact two-sided p is 2 / 2**6."""
    res = cli("compare", "--db", rtt_db, "--by", "path", "--by", "load", "--json")
    assert res.returncode == 0, res.stderr
    sides = {t["configuration"]: t for t in json.loads(res.stdout)["sides"]}
    t = sides["path=bridge load=none"]
    assert t["test"] == "Wilcoxon signed-rank" and t["n"] == 6
    assert t["p"] == pytest.approx(2 / 2**6)
    assert abs(t["median_difference"] - (-0.1 * 60_000)) < 500
    assert abs(sides["path=bridge load=cpu:32@sender"]["median_difference"] + 15_000) < 500
    text = cli("compare", "--db", rtt_db, "--by", "path")
    assert "sender side - responder side (overhead - response), path=bridge:" in text.stdout
    assert "paired by run p=" in text.stdout


def test_compare_paired_and_text(cli, rtt_db):
    res = cli("compare", "--db", rtt_db, "--by", "path", "--paired", "--segment", "rtt")
    assert res.returncode == 0, res.stderr
    assert "Wilcoxon signed-rank" in res.stdout and "#2 path=macvlan" in res.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--by", "colour"], "unknown factor"),
        (["--segment", "nothing"], "unknown segment"),
        (["--stat", "p42"], "unknown --stat"),
    ],
)
def test_compare_bad_input(cli, rtt_db, args, words):
    res = cli("compare", "--db", rtt_db, *args)
    assert res.returncode == 2 and words in res.stderr and len(res.stderr.splitlines()) == 1


def test_compare_of_an_empty_store_says_what_compare_takes(cli, tmp_path):
    db = tmp_path / "empty.db"
    Store(db).close()
    res = cli("compare", "--db", db)
    assert res.returncode == 2 and "nothing to compare" in res.stderr
    assert "rtt runs, floods, or two or more sweeps" in res.stderr
    assert "the store holds no experiment" in res.stderr


@pytest.mark.slow
def test_report_is_self_contained_and_opens_in_chromium(cli, rtt_db, tmp_path, browser):
    out = tmp_path / "r"
    res = cli("compare", "--db", rtt_db, "--by", "path", "--by", "load", "--out", out)
    assert res.returncode == 0, res.stderr
    page = (out / "index.html").read_text()
    assert "http://" not in page and "https://" not in page
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert figs == ["box.png", "cdf-overhead.png", "cdf-response.png", "cdf-rtt.png",
                    "cdf-wire.png", "cpu.png"]  # fmt: skip
    assert json.loads((out / "comparison.json").read_text())["statistic"] == "p50"
    view = browser.new_page()
    view.goto((out / "index.html").as_uri())
    assert view.locator("#configs tbody tr").count() == 4
    assert view.locator("#tests tbody tr").count() >= 3
    widths = view.eval_on_selector_all("img", "i => i.map(x => x.complete && x.naturalWidth)")
    assert len(widths) == len(figs) and all(w and w > 300 for w in widths)


@pytest.mark.slow
def test_assess_shows_rtt_runs_per_configuration_not_a_sweep_verdict(cli, rtt_db):
    res = cli("assess", rtt_db)
    assert res.returncode == 0, res.stderr
    assert "verdict" not in res.stdout and "PDR" not in res.stdout  # no PASTRAMI table
    assert "rtt runs in" in res.stdout and "path=macvlan" in res.stdout
    js = cli("assess", rtt_db, "--json")
    [obj] = [json.loads(line) for line in js.stdout.splitlines()]
    assert obj["kind"] == "rtt" and len(obj["configurations"]) == 4


@pytest.mark.slow
def test_report_links_the_rtt_comparison(cli, rtt_db, tmp_path):
    out = tmp_path / "r"
    res = cli("report", rtt_db, "--out", out)
    assert res.returncode == 0, res.stderr
    page = (out / "index.html").read_text()
    assert 'href="rtt/index.html"' in page and "round-trip time" in page
    assert (out / "rtt" / "index.html").is_file()
    assert list((out / "rtt" / "figures").glob("cdf-rtt.png"))
