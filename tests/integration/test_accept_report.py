"""The acceptance page of the report (accept/index.html), linked from the index, loaded
in a real headless Chromium: its verdict table and every figure decode."""

from __future__ import annotations

import pytest
from tests.conftest import FIXTURES, run_cli

IPERF3 = FIXTURES / "iperf3"


@pytest.fixture(scope="module")
def accept_report(tmp_path_factory):
    d = tmp_path_factory.mktemp("acc")
    db = d / "acc.db"
    run_cli("import", "monipe", FIXTURES / "monipe", "--db", db, "--contract", "900M",
            "--layer", "payload", check=True)  # fmt: skip
    run_cli("import", "iperf3", IPERF3 / "udp-50M-server.json", IPERF3 / "udp-50M-client.json",
            "--db", db, "--contract", "50M", "--layer", "ethernet", check=True)  # fmt: skip
    out = d / "report"
    run_cli("report", db, "--out", out, check=True)
    return out


@pytest.mark.slow
def test_files_written(accept_report):
    page = accept_report / "accept" / "index.html"
    assert page.is_file()
    figs = sorted(
        p.name for p in (accept_report / "accept" / "figures").iterdir() if p.suffix != ".key"
    )
    # bars of both tests, and one per-second series per test, each PNG and SVG
    assert sorted(f.rsplit(".", 1)[1] for f in figs) == ["png"] * 3 + ["svg"] * 3
    assert "accept/index.html" in (accept_report / "index.html").read_text()
    text = page.read_text()
    assert "http://" not in text and "https://" not in text


@pytest.mark.slow
@pytest.mark.browser
def test_accept_page_in_headless_chromium(accept_report, browser):
    page = browser.new_page()
    page.goto((accept_report / "index.html").as_uri())
    page.click("a[href='accept/index.html']")
    page.wait_for_load_state()
    assert page.url.endswith("accept/index.html")
    rows = page.eval_on_selector_all(
        "#verdicts tbody tr", "trs => trs.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert len(rows) == 2
    by_name = {r[0]: r for r in rows}
    monipe = by_name["teste_1"]
    assert monipe[2] == "900 Mbit/s" and monipe[3] == "payload"
    assert monipe[6] == "0.2%" and monipe[8] == "FAIL" and "loss" in monipe[9]
    iperf3 = next(r for r in rows if r[0].startswith("iperf3 UDP"))
    assert iperf3[3] == "ethernet" and iperf3[8] in ("PASS", "FAIL", "INCONCLUSIVE")
    sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete && i.naturalWidth)")
    assert len(sizes) == 3 and all(w and w > 500 for w in sizes)
    # the SVGs the page links load too
    for href in page.eval_on_selector_all("figcaption a", "as => as.map(a => a.href)"):
        svg = browser.new_page()
        resp = svg.goto(href)
        assert resp is not None and resp.ok
        assert svg.locator("svg").count() >= 1
        svg.close()


def test_a_client_only_import_has_no_empty_per_second_chart(tmp_path):
    """iperf3's client alone has no receiver's seconds and no CPU: nothing to draw per
    second, so no chart (an empty one said nothing)."""
    db = tmp_path / "c.db"
    run_cli("import", "iperf3", IPERF3 / "udp-50M-client.json", "--db", db, "--contract", "50M",
            check=True)  # fmt: skip
    out = tmp_path / "rep"
    run_cli("report", db, "--out", out, check=True)
    page = (out / "accept" / "index.html").read_text()
    assert "per second" not in page and not list((out / "accept" / "figures").glob("series-*"))
    assert list((out / "accept" / "figures").glob("bars.*"))
