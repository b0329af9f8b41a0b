"""A report run again draws only what changed: every figure of every page (the curves,
each method's, the trend, campaign, rtt and acceptance pages) is a job kept under the
key of its data (``shared/render.py``). Counted two ways: the report's own line
(``figures n/total (k kept)``) and the figure files' modification times."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.builders import GOLDEN_STORE
from tests.conftest import netassay_argv, run_cli
from tests.integration.test_campaign_rtt_store import _campaign as rtt_campaign
from tests.integration.test_trend_cli import COPIES, _copies
from tests.integration.test_truthful_output import _sweep as sized_sweep

from netassay.store.db import Store

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def _sweep_store(path: Path, stalled: int | None = None) -> Path:
    """The golden sweep (netassay's own trials, each with its loss locations) copied whole
    through the store's API; ``stalled``: that trial left out as a generator stall, as a
    resumed run or a re-import that judged it so would store it."""
    with Store(GOLDEN_STORE, readonly=True) as src, Store(path) as dst:
        (exp,) = [e for e in src.experiments(kinds=("sweep",)) if e.label == "golden sweep"]
        bundle = src.experiment_rows(exp.id)
        if stalled is not None:
            row = bundle.rows["trials"][stalled]
            row["excluded"] = "generator stall: a send was 25.8 ms late"
        dst.import_rows(bundle, exp.key, exp.label, exp.metadata)
    return path


@pytest.mark.slow
def test_a_trial_left_out_redraws_the_loss_figure_that_names_it(tmp_path):
    """The loss-location figure draws only the kept trials and names the loads whose
    trials were left out: a trial newly left out changes it, so it is drawn again (its
    key holds every trial, excluded or not, and the note); the same store again keeps it."""
    before = _sweep_store(tmp_path / "a.db")
    after = _sweep_store(tmp_path / "b.db", stalled=5)
    out = tmp_path / "r"
    run_cli("report", before, "--out", out, check=True)
    (loss,) = [f for f in stamps(out) if f.endswith("_loss.png")]
    was = stamps(out)
    run_cli("report", after, "--out", out, check=True)
    now = stamps(out)
    assert now[loss] != was[loss]
    assert now[loss.replace(".png", ".key")] != was[loss.replace(".png", ".key")]
    again = run_cli("report", after, "--out", out, check=True)
    n, total, kept = counted(again.stderr)
    assert n == total == kept and stamps(out) == now


@pytest.mark.slow
def test_a_warm_report_of_every_method_and_a_size_series_imports_no_matplotlib(tmp_path):
    """The golden store (a sweep with its loss figure, a search whose section says its
    caps, every other method) and a frame-size series: with every figure kept, the
    report imports no plotting code."""
    import subprocess
    import sys

    sizes = tmp_path / "sizes.db"
    with Store(sizes) as st:  # two sizes that met the goal at the top load: "at least"
        for size in (64, 1514):
            sized_sweep(st, f"s{size}", size, [50e3, 200e3], {})
    out = tmp_path / "r"
    stores = [GOLDEN_STORE, sizes]
    run_cli("report", *stores, "--out", out, check=True)
    assert any(p.name.startswith("sizes_") for p in (out / "figures").glob("*.png"))
    argv = netassay_argv("report", *stores, "--out", out)
    res = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]], capture_output=True, text=True,
        timeout=300, check=True,
    )  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()}
    assert "netassay.report.build" in imported
    assert not {m for m in imported if m.split(".")[0] == "matplotlib"}


def _routes_series(path: Path, top_share: float = 1.0) -> Path:
    """A scale series as 'sweep --routes 1,1k,100k' stores it: one sweep per FIB size,
    each at 100k and 200k frames/s, 200k carried at the first size and only
    ``top_share`` of it at the others (the loss 1k routes cost)."""
    from netassay.trial.record import TrialRecord

    with Store(path) as st:
        for j, routes in enumerate((1, 1000, 100_000)):
            tb = {"size_bytes": 60, "ip_version": 4, "sut": "router", "routes": routes}
            config = {"rates_pps": [100e3, 200e3], "runs": 1, "duration_s": 1.0,
                      "settle_s": 0.5, "testbed": tb, "testbed_name": "t"}  # fmt: skip
            exp, _ = st.add_experiment(key=f"r{routes}", kind="sweep", source="netassay-testbed",
                                       label=f"router {routes} routes", config=config,
                                       metadata={})  # fmt: skip
            got = 200_000 if j == 0 else round(200_000 * top_share)
            st.add_trials(exp, [
                TrialRecord(0, 0, 100e3, 1.0, 100_000, 100_000, "netassay-testbed"),
                TrialRecord(1, 0, 200e3, 1.0, 200_000, got, "netassay-testbed"),
            ])  # fmt: skip
    return path


@pytest.mark.slow
def test_a_scale_series_curve_is_a_job_kept_under_its_data(tmp_path):
    """A scale series' curve is drawn in the report's pool like every other figure: an
    unchanged re-run draws nothing and imports no plotting code; a series whose rates
    changed draws its curve (and the sweeps that changed) again."""
    import subprocess
    import sys

    same = _routes_series(tmp_path / "a.db")
    out = tmp_path / "r"
    first = run_cli("report", same, "--out", out, check=True)
    (curve,) = [f for f in stamps(out) if f.startswith("figures/scale_") and f.endswith(".png")]
    n, total, kept = counted(first.stderr)
    assert n == total and kept == 0
    assert "Scale: FIB routes, sweep" in (out / "index.html").read_text()
    was = stamps(out)
    again = run_cli("report", same, "--out", out, check=True)
    assert counted(again.stderr) == (total, total, total) and stamps(out) == was
    argv = netassay_argv("report", same, "--out", out)
    res = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]], capture_output=True, text=True,
        timeout=300, check=True,
    )  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()}
    assert "netassay.shared.scale" in imported
    assert not {m for m in imported if m.split(".")[0] == "matplotlib"}
    lossy = _routes_series(tmp_path / "b.db", top_share=0.9)  # the PDR falls past 1 route
    run_cli("report", lossy, "--out", out, check=True)
    now = stamps(out)
    assert now[curve] != was[curve]
    assert now[curve.replace(".png", ".key")] != was[curve.replace(".png", ".key")]
