"""netassay never states what it did not find: a frame-size table whose sweeps found no
bound says so, a bound above a cap netassay set says by how much and why, compare of a
store of plain sweeps compares them, and a store that cannot be written is refused
before anything is built. Real stores, the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.builders import store_with
from tests.conftest import run_cli as cli

from netassay.config import AnalysisConfig
from netassay.methods import of_kind
from netassay.shared.sizes import series_in, table_text
from netassay.store.db import Store
from netassay.trial.record import TrialRecord


def _sweep(st: Store, key: str, size: int, rates: list[float], lost: dict[int, float],
           metadata: dict | None = None, runs: int = 1, duration: float = 1.0) -> int:  # fmt: skip
    """A sweep of ``rates`` at frames of ``size`` bytes: each load's trials lose the share
    ``lost`` gives its index (none by default)."""
    tb = {"size_bytes": size, "ip_version": 4, "sut": "router"}
    config = {"rates_pps": rates, "runs": runs, "duration_s": duration, "settle_s": 0.5,
              "testbed": tb, "testbed_name": "t"}  # fmt: skip
    exp, _ = st.add_experiment(key=key, kind="sweep", source="netassay-testbed",
                               label=f"router {size}B", config=config,
                               metadata=metadata or {})  # fmt: skip
    trials = []
    for i, rate in enumerate(rates):
        for k in range(runs):
            sent = round(rate * duration)
            got = sent - round(sent * lost.get(i, 0.0))
            trials.append(TrialRecord(i, k, rate, duration, sent, got, "netassay-testbed"))
    st.add_trials(exp, trials)
    return exp


# -- the frame-size table --------------------------------------------------------------
def test_a_size_series_that_found_no_bound_says_at_least_and_inconclusive(tmp_path):
    """Two sizes carried 200 kpps, the highest load tested (as 'sweep --sizes ... --rates
    50k,200k' on a router that forwards more): their sweeps are INCONCLUSIVE and their
    bounds only at least 200 kpps; the table, its JSON and the report say so."""
    db = tmp_path / "s.db"
    with Store(db) as st:
        for size in (64, 1514):
            _sweep(st, f"s{size}", size, [50e3, 200e3], {})
    with Store(db, readonly=True) as st:
        [s] = series_in(st, AnalysisConfig(), of_kind)
    text = table_text(s)
    rows = text.splitlines()[2:4]
    at_least = [">=0.2000", ">=0.109", ">=0.141"]  # NDR, then PDR: Mpps, L2, L1
    assert rows[0].split() == ["68", "64", *at_least, *at_least, "INCONCLUSIVE"]
    assert rows[1].split()[-1] == "INCONCLUSIVE" and rows[1].split()[2] == ">=0.2000"
    assert "INCONCLUSIVE: 2 of 2 sizes (68 B, 1518 B)" in text
    for p in s.as_json()["sizes"]:
        assert p["verdict"] == "INCONCLUSIVE" and p["ndr_at_least"] and p["pdr_at_least"]
    rep = cli("report", db, "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "RFC 2544 frame sizes: sweep" in page
    assert "&gt;=0.2000" in page and "INCONCLUSIVE: 2 of 2 sizes" in page


def test_a_size_whose_sweep_found_its_bound_shows_it_plainly(tmp_path):
    db = tmp_path / "f.db"
    rates = [50e3, 100e3, 150e3, 200e3, 250e3]
    with Store(db) as st:
        for size in (64, 1514):  # above 100 kpps a fifth and more is lost
            _sweep(st, f"f{size}", size, rates, {2: 0.2, 3: 0.4, 4: 0.5}, runs=2)
    with Store(db, readonly=True) as st:
        [s] = series_in(st, AnalysisConfig(), of_kind)
    row = table_text(s).splitlines()[2].split()
    assert row[2] == "0.1000" and ">=" not in row  # NDR 100 kpps: 150 kpps lost
    assert all(not p["ndr_at_least"] and not p["pdr_at_least"] for p in s.as_json()["sizes"])


# -- a bound above a cap netassay set --------------------------------------------------
def test_a_sweeps_bound_above_its_cap_is_explained(tmp_path):
    """--sut-cap 200k with 1 s trials: 203.5 kpps lost nothing (the policer's bucket of
    4,000 frames passes on top of the rate); assess says by how much and why."""
    db = tmp_path / "c.db"
    meta = {"sut_cap_pps": 200e3, "sut_cap_bucket_pkts": 4000}
    with Store(db) as st:
        _sweep(st, "c", 64, [190e3, 200e3, 203.5e3, 210e3, 220e3], {3: 0.03, 4: 0.09},
               metadata=meta, runs=2)  # fmt: skip
    res = cli("assess", db, "--json")
    assert res.returncode == 0, res.stderr
    a = json.loads(res.stdout)
    assert a["ndr_pps"] == 203.5e3
    [ndr] = [x for x in a["above_cap"] if x["bound"] == "NDR"]
    assert ndr["excess_pps"] == pytest.approx(3500) and ndr["excess_share"] == pytest.approx(0.0175)
    assert ndr["bucket_pkts"] == 4000 and ndr["bucket_excess_pps"] == pytest.approx(4000)
    assert ndr["explained_by_bucket"] is True
    text = cli("assess", db).stdout
    assert "NDR 203.5 kpps is 3.5 kpps (1.75%) above the cap netassay set (--sut-cap" in text
    assert "full bucket of 4,000 frames" in " ".join(text.split())


def test_a_searchs_bound_above_its_cap_is_explained(tmp_path):
    """The golden store's search (a router capped at 100 kpps, 0.5 s trials, measured):
    its NDR lower bound of 102.3 kpps is the bucket's 2,000 frames over 0.5 s, said in
    its text and its JSON."""
    db = store_with(tmp_path / "g.db", "search")
    res = cli("assess", db, "--json")
    assert res.returncode == 0, res.stderr
    [found] = [json.loads(line) for line in res.stdout.splitlines()]
    ndr = next(x for x in found["above_cap"] if x["bound"] == "NDR")
    assert ndr["cap_pps"] == 100e3 and ndr["bucket_pkts"] == 2000
    assert ndr["trial_duration_s"] == pytest.approx(0.5, abs=1e-3)
    assert 0 < ndr["excess_pps"] <= ndr["bucket_excess_pps"] and ndr["explained_by_bucket"]
    text = cli("assess", db).stdout
    assert "NDR 102.3 kpps is 2.315 kpps (2.32%) above the cap netassay set" in text


# -- compare of plain sweeps -----------------------------------------------------------
def test_compare_of_plain_sweeps_ranks_them_by_pdr_with_their_loss_per_load(tmp_path):
    db = tmp_path / "trend.db"
    rates = [50e3, 100e3, 150e3, 200e3, 250e3]
    with Store(db) as st:
        _sweep(st, "a", 64, rates, {3: 0.2, 4: 0.4}, runs=2)  # PDR 150 kpps
        _sweep(st, "b", 64, rates, {2: 0.1, 3: 0.3, 4: 0.5}, runs=2)  # PDR 100 kpps
    res = cli("compare", "--db", db, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["kind"] == "sweep" and doc["shared_loads_pps"] == rates
    ranked = sorted(doc["experiments"], key=lambda r: r["rank"])
    assert [(r["experiment_id"], r["pdr_pps"]) for r in ranked] == [(1, 150e3), (2, 100e3)]
    assert [ld["plr"] for ld in ranked[1]["loads"]] == pytest.approx([0, 0, 0.1, 0.3, 0.5])
    text = cli("compare", "--db", db)
    assert text.returncode == 0, text.stderr
    assert "sweeps in" in text.stdout and "#1 router 64B (experiment 1): PDR@0.5% 150 kpps" in (
        text.stdout
    )
    assert "rtt" not in text.stdout + text.stderr


def test_compare_of_one_sweep_says_what_compare_takes(tmp_path):
    db = tmp_path / "one.db"
    with Store(db) as st:
        _sweep(st, "a", 64, [50e3, 100e3], {})
    res = cli("compare", "--db", db)
    assert res.returncode == 2
    [line] = res.stderr.splitlines()
    assert line.startswith(f"netassay: {db}: nothing to compare")
    assert "two or more sweeps" in line and "the store holds 1 sweep" in line
    assert "netassay rtt" not in line


# -- a store that cannot be written, refused before anything is built ------------------
@pytest.fixture
def bad_stores() -> Iterator[dict[str, Path]]:
    """In a folder everyone may write: a folder, a text file, a store of another program,
    a healthy netassay store only root may write; a path in a folder that does not exist,
    and one in a folder only root may write."""
    d = Path(tempfile.mkdtemp(prefix="na-stores-"))
    try:
        (d / "folder").mkdir()
        (d / "locked").mkdir()
        (d / "notadb.txt").write_text("not a store\n")
        sqlite3_with_table(d / "other.db")
        with Store(d / "ok.db"):
            pass
        for f in d.iterdir():
            f.chmod(0o755 if f.is_dir() else 0o644)
        d.chmod(0o777)
        yield {
            "folder": d / "folder", "text": d / "notadb.txt", "other": d / "other.db",
            "missing": d / "nowhere" / "x.db", "ok": d / "ok.db", "new": d / "locked" / "x.db",
        }  # fmt: skip
    finally:
        shutil.rmtree(d)


def sqlite3_with_table(path: Path) -> Path:
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    return path


REFUSED = {
    "folder": "is a folder",
    "text": "not a SQLite database",
    "other": "not a netassay store",
    "missing": "its folder does not exist",
}


def _refused(res: subprocess.CompletedProcess[str], said: str) -> None:
    assert res.returncode == 4, (res.returncode, res.stderr)
    [line] = res.stderr.splitlines()
    assert line.startswith("netassay: ") and said in line and "nothing was built" in line
    assert "Traceback" not in res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [["sweep", "--rates", "10k"], ["search"],
                                     ["latency", "--rates", "10k"]])  # fmt: skip
def test_a_dry_run_refuses_a_store_it_could_not_write(command, bad_stores, tmp_path):
    for what, said in REFUSED.items():
        res = cli(*command, "--db", bad_stores[what], "--dry-run",
                  env_extra={"NETASSAY_RUN_DIR": str(tmp_path / "run")})  # fmt: skip
        _refused(res, said)
    assert not (bad_stores["missing"].parent).exists()
    ok = cli(*command, "--db", bad_stores["ok"], "--dry-run",
             env_extra={"NETASSAY_RUN_DIR": str(tmp_path / "run")})  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def _unprivileged() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (to drop to an unprivileged user) and setpriv")
    probe = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", "1"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("the unprivileged user cannot run this Python")


# each measuring command, and one store it must refuse (each kind of refusal once)
MEASURING = [
    (["sweep", "--rates", "10k"], "folder"), (["search"], "text"), (["flood"], "other"),
    (["soak", "--rate", "10k"], "missing"), (["rtt"], "new"),
    (["accept", "--contract", "100M", "--embedded"], "ok"), (["tcp"], "folder"),
    (["batching"], "text"), (["doctor"], "new"),
]  # fmt: skip
UNPRIVILEGED = {  # said as every store error says it (store/faults.access_problem)
    **REFUSED, "new": "/locked is read-only for user 65534", "ok": "the file is read-only for user",
}  # fmt: skip


@pytest.mark.parametrize(("command", "store"), MEASURING, ids=[c[0] for c, _ in MEASURING])
def test_every_measuring_command_refuses_the_store_before_anything_else(command, store, bad_stores):
    """As a user who may not build a testbed: a command that reached its testbed would
    say it needs root (exit 6); the store is refused first, exit 4, one line."""
    _unprivileged()
    env = {"NETASSAY_RUN_DIR": str(bad_stores["ok"].parent / "run")}
    res = cli(*command, "--db", bad_stores[store], user=65534, env_extra=env)
    _refused(res, UNPRIVILEGED[store])


def test_campaign_run_refuses_the_store_before_any_cell(bad_stores):
    _unprivileged()
    spec = bad_stores["ok"].parent / "c.toml"
    spec.write_text(
        '[campaign]\nname = "c"\nmethod = "sweep"\n[fixed]\nrates = "10k"\nruns = 1\n'
        '[factors]\nsut_cap = ["50k", "80k"]\n'
    )
    spec.chmod(0o644)
    for what in ("text", "new"):
        _refused(cli("campaign", "run", spec, "--db", bad_stores[what], user=65534),
                 UNPRIVILEGED[what])  # fmt: skip
