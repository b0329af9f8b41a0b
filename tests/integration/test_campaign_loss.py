"""A sweep campaign's page draws each cell's loss by location per load, side by side
(seed 003's Fig. 5 for each level of a factor): on the golden campaign (two measured
cells, the router capped at 80 kpps and at 120 kpps) every lost frame is at the SUT's
egress, where the cap's policer drops it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import run_cli

from netassay.campaign import results
from netassay.report.campaign import loss_panels
from netassay.store.db import Store

GOLDEN = Path(__file__).parents[1] / "data" / "golden" / "campaign.db"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("camp") / "campaign.db"
    shutil.copy(GOLDEN, path)
    return path


def test_each_cell_has_its_loss_by_location_per_load(db):
    with Store(db, readonly=True) as st:
        rows = results.comparison(st, [], None)["experiments"]
        panels = {
            r["factors"]["sut_cap"]: (rates, shares) for r, rates, shares in loss_panels(st, rows)
        }
        trials = {e.label: st.trials(e.id) for e in st.experiments()}
    assert set(panels) == {"80k", "120k"}
    rates, shares = panels["80k"]
    assert list(rates) == [50_000, 100_000, 150_000]
    # the stored counters, by hand: 8405 and 33404 of 50000 and 75000 lost at the cap
    assert shares["sut_egress"].tolist() == pytest.approx([0.0, 8405 / 50_000, 33404 / 75_000])
    rates, shares = panels["120k"]
    assert shares["sut_egress"].tolist() == pytest.approx([0, 0, (12604 + 12605) / 2 / 75_000])
    for loc, s in shares.items():
        if loc != "sut_egress":
            assert not s.any(), loc
    assert sum(len(t) for t in trials.values()) == 12


@pytest.mark.slow
def test_the_campaign_page_shows_it(db, tmp_path):
    out = tmp_path / "report"
    run_cli("report", db, "--out", out, check=True)
    page = (out / "campaign-golden" / "index.html").read_text()
    assert 'id="loss-figure"' in page and "Where the packets were lost" in page
    assert page.count("data:image/png;base64,") == 4
    svg = (out / "campaign-golden" / "figures" / "loss.svg").read_text()
    assert "sut_cap=80k" in svg and "sut_cap=120k" in svg and "SUT egress" in svg
