"""netassay never states what it did not find: a frame-size table whose sweeps found no
bound says so, a bound above a cap netassay set says by how much and why, compare of a
store of plain sweeps compares them, and a store that cannot be written is refused
before anything is built. Real stores, the real CLI."""

from __future__ import annotations

from tests.conftest import run_cli as cli

from netassay.config import AnalysisConfig
from netassay.methods.sizes import series_in, table_text
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
        [s] = series_in(st, AnalysisConfig())
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
        [s] = series_in(st, AnalysisConfig())
    row = table_text(s).splitlines()[2].split()
    assert row[2] == "0.1000" and ">=" not in row  # NDR 100 kpps: 150 kpps lost
    assert all(not p["ndr_at_least"] and not p["pdr_at_least"] for p in s.as_json()["sizes"])
