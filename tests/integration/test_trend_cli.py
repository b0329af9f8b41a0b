"""netassay trend --db on stores: the real CLI, SQLite and Chromium.

A store with many results of one configuration is made from the golden store's flood
(measured once on the embedded testbed, kernel router capped at 100 kpps): it is copied
ten times through the store's API, each copy's forwarded frames scaled by a seeded 1%
noise, and by 0.9 from the seventh copy on (the frames the sink did not get are put on
the cap's drop count, so that every frame is still accounted for). The ground truth is
then a -10% step at the seventh point. The golden store's PASTRAMI imports give a real
BAD result in a series of two kernels."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from tests.builders import GOLDEN_STORE

from netassay.report import series
from netassay.store.db import Store

STEP_AT, COPIES = 6, 10


def _copies(path, factors, kernels):
    """The golden flood copied once per factor (its frames forwarded scaled by it), each
    copy on the kernel given."""
    rng = np.random.default_rng(11)
    with Store(GOLDEN_STORE, readonly=True) as src, Store(path) as dst:
        (flood,) = src.experiments(kinds=("mrr",))
        for n, (f, kernel) in enumerate(zip(factors, kernels, strict=True)):
            bundle = src.experiment_rows(flood.id)
            env = {**json.loads(bundle.experiment["environment_json"]), "kernel": kernel}
            bundle.experiment["environment_json"] = json.dumps(env)
            for t in bundle.rows["trials"]:
                got = round(t["received"] * f * (1 + 0.01 * rng.standard_normal()))
                lost = json.loads(t["loss_location_json"])
                lost["sut_egress"] += t["received"] - got
                t["received"], t["loss_location_json"] = got, json.dumps(lost)
            dst.import_rows(bundle, f"trend-{n}", f"flood copy {n + 1}", flood.metadata)
    return path


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    factors = [1.0] * STEP_AT + [0.9] * (COPIES - STEP_AT)
    kernels = ["6.8"] * STEP_AT + ["6.12"] * (COPIES - STEP_AT)
    return _copies(tmp_path_factory.mktemp("trend") / "t.db", factors, kernels)


def _mrr(db):
    with Store(db, readonly=True) as st:
        return [
            float(np.median([t["received"] / t["duration_s"] for t in st.trials(e.id)]))
            for e in st.experiments()
        ]


@pytest.mark.slow
def test_the_step_is_found_at_its_run_with_its_size(stepped, cli):
    res = cli("trend", "--db", stepped, "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    (s,) = out["series"]
    assert s["method"] == "flood" and s["metric"] == "mrr_pps" and s["by"] == "time"
    assert [p["value"] for p in s["points"]] == pytest.approx(_mrr(stepped))
    assert [(g["first"], g["last"], g["change"]) for g in s["groups"]] == [
        (0, STEP_AT - 1, "first"), (STEP_AT, COPIES - 1, "regression"),
    ]  # fmt: skip
    mrr = _mrr(stepped)
    expected = np.mean(mrr[STEP_AT:]) / np.mean(mrr[:STEP_AT]) - 1
    (change,) = s["changes"]
    assert change["at"] == STEP_AT and change["experiment_id"] == STEP_AT + 1
    assert change["relative"] == pytest.approx(expected) and -0.12 < expected < -0.08
    assert s["newest"] == "regression" and s["worse_by"] == pytest.approx(-expected)
    assert out["regressions"] == [
        {"series": s["id"], "label": "flood copy 10", "method": "flood", "metric": "mrr_pps",
         "relative": change["relative"], "worse_by": s["worse_by"]}
    ]  # fmt: skip
    text = cli("trend", "--db", stepped).stdout
    assert f"series {s['id']}: flood MRR of 'flood copy 10', by time" in text
    assert re.search(r"group 2: points 7-10 .*; regression -\d+\.\d% at point 7", text), text
    assert "newest group: regression" in text and "(beyond the 5.0% threshold)" in text


@pytest.mark.slow
def test_fail_on_regression_exits_1_beyond_the_threshold_only(stepped, cli):
    gate = cli("trend", "--db", stepped, "--fail-on-regression")
    assert gate.returncode == 1 and "newest group: regression" in gate.stdout
    (line,) = gate.stderr.splitlines()
    assert line.startswith("netassay: --fail-on-regression: 1 series regressed beyond 5.0%")
    assert (
        cli("trend", "--db", stepped, "--fail-on-regression", "--threshold", "20%").returncode == 0
    )


def test_by_kernel_orders_by_version_not_time(tmp_path):
    slow = ["6.12", "6.8"] * 4  # stored alternating; the newer kernel forwards 10% less
    db = _copies(tmp_path / "k.db", [0.9 if k == "6.12" else 1.0 for k in slow], slow)
    with Store(db, readonly=True) as st:
        (s,) = series.series(st, by="kernel")
    assert [p.x for p in s.trend.points] == ["6.8"] * 4 + ["6.12"] * 4
    (change,) = s.trend.changes
    assert change.first == 4 and change.change == "regression"
    assert "at point 5 (experiment 1, kernel 6.12)" in "\n".join(series.text(s))


def test_bad_results_are_marked_and_judged_only_with_all():
    with Store(GOLDEN_STORE, readonly=True) as st:
        found, everything = series.series(st), series.series(st, include_all=True)
    (s,) = [s for s in found if len(s.trend.points) == 2]  # bare-metal, 5.15 and 6.8
    assert [(p.verdict, p.used, p.mark) for p in s.trend.points] == [
        ("BAD", False, "BAD"), ("GOOD", True, ""),
    ]  # fmt: skip
    assert not s.trend.judged and s.trend.note.startswith("too short to judge: 1 trustworthy")
    (same,) = [x for x in everything if x.id == s.id]
    assert [p.used for p in same.trend.points] == [True, True]
    assert "750 kpps(BAD) 450 kpps" in "\n".join(series.text(s))


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--metric", "pdr"], 2, "no --metric 'pdr'"),
        (["--by", "nothing"], 2, "records 'nothing'"),
        (["--threshold", "5x"], 2, "bad --threshold '5x'"),
    ],
)
def test_bad_input_is_one_line(stepped, cli, args, code, said):
    res = cli("trend", "--db", stepped, *args)
    assert res.returncode == code and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert said in line, line


def test_a_missing_store_is_one_line(tmp_path, cli):
    res = cli("trend", "--db", tmp_path / "none.db")
    assert res.returncode == 4 and len(res.stderr.splitlines()) == 1, res.stderr


def test_another_figure_of_the_same_results(stepped):
    with Store(stepped, readonly=True) as st:
        (s,) = series.series(st, metric="loss")
    assert s.trend.metric == "loss_ratio" and not s.trend.higher_is_better
    assert [c.change for c in s.trend.changes] == ["regression"]  # more lost: worse


@pytest.fixture(scope="module")
def report_dir(stepped, tmp_path_factory):
    from tests.conftest import run_cli

    out = tmp_path_factory.mktemp("trend-report") / "r"
    res = run_cli("report", stepped, "--out", out)
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.slow
def test_report_has_a_trend_page_per_configuration(report_dir):
    pages = sorted((report_dir / "trend").glob("*.html"))
    assert len(pages) == 1
    index = (report_dir / "index.html").read_text()
    assert f'href="trend/{pages[0].name}"' in index and "trend: flood MRR of" in index
    assert len(list((report_dir / "trend" / "figures").glob("*.svg"))) == 1


@pytest.mark.browser
def test_trend_page_in_headless_chromium(report_dir, browser):
    page = browser.new_page()
    page.goto((report_dir / "index.html").as_uri())
    page.click('a[href^="trend/"]')
    page.wait_for_load_state()
    assert page.title().startswith("netassay trend: flood MRR")
    w = page.eval_on_selector("#trend-figure", "i => i.complete && i.naturalWidth")
    assert w and w > 400
    assert page.locator("#groups tbody tr").count() == 2
    assert page.locator("#points tbody tr").count() == COPIES
    row = page.locator("#points tbody tr").nth(STEP_AT)
    assert "regression" in row.inner_text() and row.locator("td.regression").count() == 1
    assert page.locator("#state .regression").inner_text() == "regression"
    page.click('a[href="../index.html"]')
    page.wait_for_load_state()
    assert page.title().startswith("netassay")
    page.close()
