"""A campaign store (cells written by the coordinator's own writer, from synthetic
trials): 'compare' serves it, resume bookkeeping, and its report page in headless Chromium."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import run_cli

from netassay.analysis.synthetic import ideal_plr, trials_from_plr
from netassay.campaign import execute, order, spec
from netassay.campaign.worker import CellResult, read_scratch
from netassay.store.db import Store
from netassay.trial.record import TrialRecord

CAPS = {"100k": 100_000.0, "180k": 180_000.0}
RATES = np.arange(60_000.0, 260_001.0, 20_000.0)
FILE = """[campaign]
name = "caps"
repetitions = 2
seed = 3
[fixed]
rates = "60k:260k:20k"
runs = 3
duration = "1s"
[factors]
sut_cap = ["100k", "180k"]
pinning = ["pin-1cpu", "pin-2cpu"]
"""


def _cell(c: spec.Campaign, slot: order.Slot) -> CellResult:
    cap = CAPS[c.cells[slot.cell]["sut_cap"]] * (1 + 0.01 * slot.block)
    li, rates, sent, recv = trials_from_plr(
        RATES, ideal_plr(RATES, cap), 3, 100_000, seed=slot.position
    )
    cpu = {"cpu0": {"busy": 0.9, "steal": 0.02}, "cpu1": {"busy": 0.5, "steal": 0.01}}
    trials = [
        TrialRecord(
            int(i),
            n % 3,
            float(r),
            1.0,
            int(s),
            int(v),
            "synthetic",
            float(r),
            utc="2026-01-01T00:00:00Z",
            cpu=cpu,
            run_id=7,
        )
        for n, (i, r, s, v) in enumerate(zip(li, rates, sent, recv, strict=True))
    ]
    run = {
        "id": 7,
        "started_utc": "2026-01-01T00:00:00Z",
        "resumed": False,
        "environment": {"kernel": "test"},
    }
    scratch = Path(tempfile.mkdtemp(prefix="netassay-scratch-")) / "cell.db"
    with Store(scratch) as st:  # what a worker's cell stored, read back as it sends it
        st.import_experiment(
            key="x", kind="sweep", source="netassay-testbed", label="x",
            config={"rates_pps": list(RATES), "runs": 3, "duration_s": 1.0},
            metadata={"sut": "router"}, trials=trials, runs=[run],
        )  # fmt: skip
    return CellResult(slot.key(c.name), "t1", "netassay-t1", 1.0, read_scratch(scratch))


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    c = spec.parse(FILE, "caps.toml")
    db = tmp_path_factory.mktemp("camp") / "camp.db"
    with Store(db) as st:
        cid, seed = execute._start(st, c, False, str(db))
        for slot in order.run_order(len(c.cells), c.repetitions, seed):
            execute.write_cell(st, c, cid, seed, slot, _cell(c, slot))
    return db


def test_cells_are_stored_once_tagged_with_their_levels(store_path):
    c = spec.parse(FILE, "caps.toml")
    with Store(store_path) as st:
        exps = list(st.experiments())
        assert len(exps) == 8 and st.count_trials() == 8 * len(RATES) * 3
        tag = exps[0].metadata["campaign"]
        assert (
            tag["campaign"] == "caps"
            and tag["seed"] == 3
            and set(tag["factors"]) == {"sut_cap", "pinning"}
        )
        run_ids = {t["run_id"] for t in st.trials(exps[0].id)}
        assert run_ids == {st.runs(exps[0].id)[0]["id"]}  # runs mapped to this store's
        # a resume finds the campaign unchanged; a changed file is refused
        assert execute._start(st, c, True, "db") == (1, 3)
        changed = spec.parse(FILE.replace("runs = 3", "runs = 4"), "caps.toml")
        with pytest.raises(Exception, match="changed since campaign 'caps' started"):
            execute._start(st, changed, True, "db")
        # writing a cell again writes nothing (its key is stored)
        slot = order.run_order(4, 2, 3)[0]
        assert execute.write_cell(st, c, 1, 3, slot, _cell(c, slot)) == 0


def test_compare_serves_a_campaign_store(store_path, cli):
    res = cli("compare", "--db", str(store_path), "--by", "cap", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [g["levels"]["sut_cap"] for g in out["groups"]] == ["100k", "180k"]
    assert {g["levels"]["sut_cap"]: g["rank"] for g in out["groups"]} == {"180k": 1, "100k": 2}
    c = out["effects"][0]["comparisons"][0]
    assert c["test"] == "Wilcoxon signed-rank" and c["n_pairs"] == 4  # paired by block
    assert c["cliffs_delta"] == 1.0 and c["hodges_lehmann_pps"] > 70_000
    text = cli("compare", "--db", str(store_path), "--by", "pinning")
    assert text.returncode == 0 and "effect of pinning on PDR" in text.stdout
    bad = cli("compare", "--db", str(store_path), "--by", "nope")
    assert bad.returncode == 2 and "unknown factor 'nope'" in bad.stderr


@pytest.fixture(scope="module")
def report_dir(store_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "report"
    run_cli("report", store_path, "--out", out, check=True)
    return out


@pytest.mark.slow
def test_the_index_links_the_campaign_page(report_dir):
    index = (report_dir / "index.html").read_text()
    assert 'href="campaign-caps/index.html"' in index
    page = (report_dir / "campaign-caps" / "index.html").read_text()
    assert "http://" not in page and "https://" not in page
    assert page.count("data:image/png;base64,") == 3
    assert (report_dir / "campaign-caps" / "figures" / "pdr_by_factor.svg").exists()
    # the cells side by side: a bar per sut_cap level and per pinning, PDR and NDR panels
    svg = (report_dir / "campaign-caps" / "figures" / "side_by_side.svg").read_text()
    assert "pinning=pin-1cpu" in svg and "pinning=pin-2cpu" in svg and "NDR (kpps)" in svg
    assert 'id="side-figure"' in page and "p99 latency at PDR" not in page  # no latency kept


@pytest.mark.slow
@pytest.mark.browser
def test_campaign_page_in_headless_chromium(report_dir, browser):
    page = browser.new_page()
    page.goto((report_dir / "index.html").as_uri())
    page.click('a[href="campaign-caps/index.html"]')
    page.wait_for_load_state()
    assert page.locator("#matrix tbody tr").count() == 8
    assert page.locator("#groups tbody tr").count() == 4
    assert page.locator("#effects tbody tr").count() == 2
    sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete && i.naturalWidth)")
    assert len(sizes) == 3 and all(w and w > 300 for w in sizes)
    links = page.eval_on_selector_all("a.cellfig", "as => as.map(a => a.href)")
    assert len(links) == 8
    for href in links:  # each cell's PASTRAMI figure is there and decodes
        fig = browser.new_page()
        fig.goto(href)
        w = fig.eval_on_selector("img", "i => i.complete && i.naturalWidth")
        assert w and w > 500
        fig.close()
    assert "Wilcoxon signed-rank" in page.locator("#effects").inner_text()


def test_one_coordinator_writes_a_store(tmp_path):
    import fcntl
    import os

    from netassay.errors import UsageError

    db = tmp_path / "one.db"
    Store(db).close()
    fd = os.open(db, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running coordinator holds it
        busy = pytest.raises(UsageError, match="another 'netassay campaign run' is writing")
        with busy, execute._sole_writer(str(db)):
            pass
    finally:
        os.close(fd)
    with execute._sole_writer(str(db)):  # released: the next one gets it
        pass


@pytest.fixture(scope="module")
def two_campaigns(store_path, tmp_path_factory):
    """The store above, and a second campaign ('caps2') written into a copy of it."""
    import shutil

    db = tmp_path_factory.mktemp("two") / "two.db"
    shutil.copy(store_path, db)
    c = spec.parse(FILE.replace('name = "caps"', 'name = "caps2"'), "caps2.toml")
    with Store(db) as st:
        cid, seed = execute._start(st, c, False, str(db))
        for slot in order.run_order(len(c.cells), c.repetitions, seed):
            execute.write_cell(st, c, cid, seed, slot, _cell(c, slot))
    return db


@pytest.mark.slow
def test_compare_each_campaign_of_a_store_or_the_one_named(two_campaigns, cli):
    text = cli("compare", "--db", two_campaigns, "--by", "cap", check=True).stdout
    assert text.startswith("2 campaigns in ") and "caps, caps2 (--campaign NAME for one)" in text
    assert "campaign caps: 8 experiments" in text and "campaign caps2: 8 experiments" in text
    out = cli("compare", "--db", two_campaigns, "--json", check=True).stdout
    dec, objs, at = json.JSONDecoder(), [], 0
    while at < len(out.strip()):
        obj, at = dec.raw_decode(out, at)
        objs.append(obj)
        at += len(out[at:]) - len(out[at:].lstrip())
    assert [o["campaign"] for o in objs] == ["caps", "caps2"]
    one = json.loads(cli("compare", "--db", two_campaigns, "--campaign", "caps2", "--json").stdout)
    assert one["campaign"] == "caps2" and len(one["experiments"]) == 8
    bad = cli("compare", "--db", two_campaigns, "--campaign", "nope")
    assert bad.returncode == 2 and "its campaigns: caps, caps2" in bad.stderr
