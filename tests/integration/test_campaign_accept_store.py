"""Accept cells through the campaign's store path: a cell's acceptance test is read from
its scratch store and written to the campaign's store once (runs, intervals, CPU samples
and the tool's verbatim output with it), then compared and shown on the campaign page."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli

from netassay import invoke
from netassay.campaign import order, results, spec
from netassay.campaign.execute import write_cell
from netassay.campaign.worker import CellResult, read_scratch
from netassay.methods.accept import scenarios
from netassay.methods.accept.store import load_accept_tests, store_accept_test
from netassay.report.campaign import render_page
from netassay.store.db import Store
from netassay.trial.accept import AcceptRun, AcceptTest, CpuSample, Interval

FILE = """\
[campaign]
name = "links"
method = "accept"
repetitions = 2
seed = 3
[fixed]
contract = "100M"
layer = "payload"
runs = 2
[factors]
link_cap = ["110M", "90M"]
"""


def _run(index: int, bps: float, busy: float) -> AcceptRun:
    ivs = [Interval(i, i + 1.0, int(bps / 8), int(bps / 8 / 1472), 0) for i in range(3)]
    return AcceptRun(
        index=index, tool="iperf3", tool_version="3.12", phase="sustained",
        offered_bps=100e6, datagram_bytes=1472, ip_version=4, duration_s=3.0,
        sent_packets=sum(i.packets for i in ivs), received_packets=sum(i.packets for i in ivs),
        lost_packets=0, intervals=ivs, raw='{"end": {}}', sent_bytes=int(100e6 * 3 / 8),
        cpu=[CpuSample(t + 1.0, {"cpu0": {"busy": busy}, "cpu1": {"busy": 0.1}}) for t in range(3)],
    )  # fmt: skip


def _cell(tmp_path, c, slot) -> CellResult:
    """What a worker returns for a cell: its test (the link delivers min(cap, contract)
    less a little), stored in a scratch store and read back."""
    cap = spec.params("accept")["link_cap"].canonical(c.cells[slot.cell]["link_cap"])
    bps = min(cap, 100e6) * (0.999 - 0.001 * slot.block)
    test = AcceptTest(
        "netassay accept", "t", 100e6, "payload",
        [_run(1, bps, 0.5), _run(2, bps, 0.7)], link={"cap_bps": cap},
    )  # fmt: skip
    scratch = tmp_path / f"scratch-{slot.position}.db"
    with Store(scratch) as st:
        store_accept_test(st, test)
    return CellResult(slot.key(c.name), "camp", "local", 1.0, read_scratch(scratch))


def store_cells(tmp_path, text: str, make_cell) -> tuple[Path, list[int], list[int]]:
    """A campaign's cells, as ``make_cell(tmp_path, campaign, slot)`` returns them from
    their workers, written to the campaign's store twice (the second time as a resume
    after a crash would): (store, written the first time, written again)."""
    c = spec.parse(text, "camp.toml")
    assert c.seed is not None
    db = tmp_path / "camp.db"
    slots = order.run_order(len(c.cells), c.repetitions, c.seed)
    cells = [make_cell(tmp_path, c, s) for s in slots]
    with Store(db) as st:
        cid = st.add_campaign(c.name, c.seed, c.to_json())
        runs = [
            [write_cell(st, c, cid, c.seed, s, x) for s, x in zip(slots, cells, strict=True)]
            for _ in range(2)
        ]
    return db, runs[0], runs[1]


def compare_cells(tmp_path, text: str, make_cell, by: list[str]) -> tuple[dict, dict]:
    """The cells stored (``store_cells``), then compared by ``by`` and their campaign
    page written in ``tmp_path/page``: (the comparison, what the index shows)."""
    db, _, _ = store_cells(tmp_path, text, make_cell)
    with Store(db, readonly=True) as st:
        name = spec.parse(text).name
        return results.comparison(st, by), render_page(st, name, tmp_path / "page", {}, "../i.html")


def _campaign_store(tmp_path):
    return store_cells(tmp_path, FILE, _cell)


def test_each_accept_cell_is_stored_once_with_its_runs(tmp_path):
    db, written, again = _campaign_store(tmp_path)
    assert written == [2, 2, 2, 2] and again == [0, 0, 0, 0]  # a resume writes nothing twice
    with Store(db, readonly=True) as st:
        tests = list(load_accept_tests(st, raw=True))
        assert len(tests) == 4 and all(t.key.startswith("campaign-links-b") for t in tests)
        t = tests[0]
        assert len(t.runs) == 2 and len(t.runs[0].intervals) == 3 and len(t.runs[0].cpu) == 3
        assert t.runs[0].raw == '{"end": {}}'
        tag = t.metadata["campaign"]
        assert tag["method"] == "accept" and tag["settings"]["contract"] == "100M"
        assert "experiment_id" not in {k for k in t.metadata if k != "experiment_id"}
        assert t.metadata["role"] == "cell" and t.label.startswith("links link_cap=")
        assert st.trials(t.metadata["experiment_id"]) == []


def test_accept_cells_are_compared_on_throughput_and_loss(tmp_path):
    result, page = compare_cells(tmp_path, FILE, _cell, ["cap"])
    assert result["method"] == "accept"
    rows = result["experiments"]
    assert {r["verdict"] for r in rows if r["factors"]["link_cap"] == "110M"} == {"PASS"}
    assert {r["verdict"] for r in rows if r["factors"]["link_cap"] == "90M"} == {"FAIL"}
    r = rows[0]
    assert r["trials"] == 2 and r["loss_ratio"] == 0 and r["throughput_ci95_bps"]
    assert r["cpu_busy"] == {"cpu0": 0.6, "cpu1": 0.1}
    ranked = sorted(result["groups"], key=lambda g: g["rank"])
    assert [g["levels"]["link_cap"] for g in ranked] == ["110M", "90M"]
    assert ranked[0]["verdicts"] == {"PASS": 2} and ranked[1]["verdicts"] == {"FAIL": 2}
    assert ranked[1]["failed_seconds"]["median"] == 6
    assert [e["metric"] for e in result["effects"]] == ["throughput_bps", "loss_ratio"]
    cmp = result["effects"][0]["comparisons"][0]
    # two blocks, the other factors alike: the pairs by block, Wilcoxon signed-rank
    assert cmp["test"] == "Wilcoxon signed-rank" and cmp["n_pairs"] == 2
    assert (cmp["level"], cmp["against"]) == ("110M", "90M")  # levels ordered by number
    assert cmp["hodges_lehmann_bps"] > 8e6 and cmp["cliffs_delta"] == 1.0
    text = "\n".join(results.text(result))
    assert "#1 link_cap=110M: n=2 throughput" in text and "PASS 2" in text
    assert "effect of link_cap on throughput (Wilcoxon signed-rank" in text
    assert "effect of link_cap on loss ratio" in text
    assert "Hodges-Lehmann shift +" in text and "Mbit/s" in text
    html = (tmp_path / "page" / "index.html").read_text()
    assert "throughput median" in html and "failed seconds" in html and "PASS" in html
    assert "link_cap (throughput)" in html
    assert "throughput" in page["text"] and "#1 link_cap=110M" in page["text"]


def test_an_accept_cells_scenario_knobs_make_its_requests_scenario(tmp_path):
    """A cell's scenario knobs reach its Request as 'accept --scenarios' reads them
    ("none" CPUs, "4M" buffers), its label naming the scenario; a cell without any runs
    the default scenario under its own label."""
    c = spec.parse(
        FILE.replace("runs = 2\n", 'runs = 2\nclient_cpu = "none"\nsocket_buffer = "4M"\n').replace(
            "[factors]\n", "[factors]\nrx_cpu = [0, 1]\nmtu = [1500, 9000]\n"
        ),
        "s.toml",
    )
    db = str(tmp_path / "cell.db")
    req, options = invoke.cell(c.method, c.settings(7), db=db, name="acc1", label="links 7")
    s = req.scenario
    assert (s.client_cpu, s.rx_cpu, s.mtu, s.socket_buffer) == (None, 1, 9000, 4_000_000)
    assert s.server_cpu == 1 and s.label() == "rx1/tx-"
    assert req.embedded and req.contract_bps == 100e6 and req.runs == 2
    assert options.label == req.label == "links 7 rx1/tx-"
    assert (options.db, options.name) == (db, "acc1")
    plain = spec.parse(FILE, "p.toml")
    req, options = invoke.cell("accept", plain.settings(0), db=db, name="acc1", label="l")
    assert req.scenario == scenarios.Scenario() and options.label == "l"


@pytest.mark.slow
@pytest.mark.browser
def test_the_accept_campaign_page_in_headless_chromium(tmp_path, browser):
    db, _, _ = _campaign_store(tmp_path)
    out = tmp_path / "report"
    run_cli("report", db, "--out", out, check=True)
    page = browser.new_page()
    page.goto((out / "index.html").as_uri())
    page.click('a[href="campaign-links/index.html"]')
    page.wait_for_load_state()
    assert page.locator("#matrix tbody tr").count() == 4
    assert page.locator("#matrix td.GOOD").count() == 2  # the PASSes
    assert page.locator("#matrix td.BAD").count() == 2
    assert page.locator("#groups tbody tr").count() == 2
    effects = page.locator("#effects").inner_text()
    assert "link_cap (throughput)" in effects and "link_cap (loss ratio)" in effects
    sizes = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete && i.naturalWidth)")
    assert len(sizes) == 3 and all(w and w > 300 for w in sizes)


def test_a_testbed_a_dead_cell_left_is_removed_before_the_next_cell(tmp_path, monkeypatch):
    import json
    import os
    import subprocess

    from netassay.campaign.worker import _remove_orphan
    from netassay.testbed import state as testbed_state

    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path))
    dead = subprocess.Popen(["true"])  # a pid that no longer runs
    dead.wait()

    def left(name: str, pid: int, persistent: bool) -> None:
        state = {"name": name, "kind": "accept", "pid": pid, "persistent": persistent}
        (tmp_path / f"{name}.json").write_text(json.dumps(state))

    left("dead", dead.pid, False)  # built for a cell whose process died mid-build
    left("up", dead.pid, True)  # left up by 'testbed up': the user's
    left("live", os.getppid(), False)  # its builder still runs
    assert _remove_orphan("dead") and testbed_state.read_state("dead") is None
    assert not _remove_orphan("up") and testbed_state.read_state("up") is not None
    assert not _remove_orphan("live") and testbed_state.read_state("live") is not None
    assert not _remove_orphan("none")
