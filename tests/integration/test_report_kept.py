"""A report run again draws only what changed: every figure of every page (the curves,
each method's, the trend, campaign, rtt and acceptance pages) is a job kept under the
key of its data (``methods/render.py``). Counted two ways: the report's own line
(``figures n/total (k kept)``) and the figure files' modification times."""

from __future__ import annotations

import re
from pathlib import Path

from tests.builders import GOLDEN_STORE
from tests.conftest import netassay_argv, run_cli
from tests.integration.test_campaign_rtt_store import _campaign as rtt_campaign
from tests.integration.test_trend_cli import COPIES, _copies

GOLDEN_CAMPAIGN = GOLDEN_STORE.with_name("campaign.db")
FIGURE = (".png", ".svg", ".key")


def stamps(out: Path) -> dict[str, int]:
    """Every figure file under a report folder, with its modification time (ns)."""
    return {
        p.relative_to(out).as_posix(): p.stat().st_mtime_ns
        for p in out.rglob("*")
        if p.suffix in FIGURE
    }


def counted(stderr: str) -> tuple[int, int, int]:
    """The report's last ``figures n/total (k kept)``: (n, total, kept)."""
    n, total, kept = re.findall(r"figures (\d+)/(\d+) \((\d+) kept\)", stderr)[-1]
    return int(n), int(total), int(kept)


def test_an_unchanged_rerun_draws_no_figure_of_any_page(tmp_path):
    rtt, _, _ = rtt_campaign(tmp_path)  # a campaign of the rtt method: its own columns
    flood = _copies(tmp_path / "trend.db", [1.0] * 4, ["6.8"] * 4)  # a trend page
    stores = [GOLDEN_STORE, GOLDEN_CAMPAIGN, rtt, flood]
    out = tmp_path / "r"
    first = run_cli("report", *stores, "--out", out, check=True)
    n, total, kept = counted(first.stderr)
    assert n == total and kept == 0
    pages = {p.parent.name for p in out.rglob("*.html") if p.parent != out}
    assert {"rtt-1", "accept-1", "campaign-golden-2", "campaign-paths-3", "trend-4"} <= pages
    drawn = stamps(out)
    assert len([f for f in drawn if f.endswith(".png")]) == total
    again = run_cli("report", *stores, "--out", out, check=True)
    assert counted(again.stderr) == (total, total, total)
    assert stamps(out) == drawn  # not one figure written again


def test_a_changed_experiment_redraws_exactly_its_figures(tmp_path):
    """Two stores of the same ten floods, one flood's frames forwarded 10% fewer in the
    second: its report over the first's draws that flood's figure and the trend that
    shows it, nothing else."""
    changed = 3
    before = _copies(tmp_path / "a.db", [1.0] * COPIES, ["6.8"] * COPIES)
    factors = [0.9 if i == changed else 1.0 for i in range(COPIES)]
    after = _copies(tmp_path / "b.db", factors, ["6.8"] * COPIES)
    out = tmp_path / "r"
    run_cli("report", before, "--out", out, check=True)
    was = stamps(out)
    res = run_cli("report", after, "--out", out, check=True)
    assert counted(res.stderr) == (COPIES + 1, COPIES + 1, COPIES - 1)
    now = stamps(out)
    assert now.keys() == was.keys()
    redrawn = {f for f in now if now[f] != was[f]}
    ours = f"mrr_flood_copy_{changed + 1}"
    trend = {f for f in now if f.startswith("trend/figures/")}
    assert redrawn == {f"figures/{ours}{s}" for s in FIGURE} | trend
    assert len(trend) == 3  # the trend's png, svg and key


def test_a_warm_report_imports_no_plotting_code(tmp_path, pastrami_files):
    """With every figure kept, the report imports neither matplotlib nor the methods its
    store holds nothing of (MLRsearch with the search)."""
    db, out = tmp_path / "p.db", tmp_path / "r"
    run_cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    run_cli("report", db, "--out", out, check=True)
    import subprocess
    import sys

    argv = netassay_argv("report", db, "--out", out)
    res = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]], capture_output=True, text=True,
        timeout=300, check=True,
    )  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()}
    assert "netassay.report.build" in imported
    assert not {m for m in imported if m.split(".")[0] in ("matplotlib", "MLRsearch")}
