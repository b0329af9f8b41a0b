"""The RFC 2544 frame-size series in one command (``--sizes``), proven by a ground truth:
a kernel router capped at 100 kpps (a policer counting frames, whatever their size;
its bucket's burst is a share of a short flood: 2 s keep it under 5%) forwards 100 kpps
at every size, so its table's Gbit/s grow with the frame exactly as
RFC 2544's arithmetic says; the report draws the series.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.store.db import Store

pytestmark = pytest.mark.system

CAP_PPS = 100_000
SIZES = (64, 508, 1514)  # RFC 2544's 68-, 512- and 1518-byte frames with their FCS


@pytest.mark.slow
def test_a_flood_series_finds_the_cap_at_every_size(tb_name, tmp_path, cli, netns_of):
    db = tmp_path / "s.db"
    res = cli(
        "flood", "--name", tb_name, "--sut", "router", "--sut-cap", "100k", "--duration", "2s",
        "--runs", "1", "--db", db, "--sizes", ",".join(map(str, SIZES)), "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    *floods, series = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(floods) == len(SIZES) and series["series"] == "frame sizes"
    assert [p["size_bytes"] for p in series["sizes"]] == list(SIZES)
    for p in series["sizes"]:
        print(f"{p['frame_bytes']} B: MRR {p['mrr_pps']:.0f} pps, {p['mrr_gbps_l1']:.3f} Gb/s L1")
        assert abs(p["mrr_pps"] - CAP_PPS) <= 0.05 * CAP_PPS, p
        assert p["mrr_gbps_l2"] == pytest.approx(p["mrr_pps"] * p["frame_bytes"] * 8 / 1e9)
        assert p["mrr_gbps_l1"] == pytest.approx(p["mrr_pps"] * (p["frame_bytes"] + 20) * 8 / 1e9)
    with Store(db, readonly=True) as st:
        sizes = [e.config["testbed"]["size_bytes"] for e in st.experiments()]
    assert sizes == list(SIZES)  # one stored experiment per size
    assert netns_of(tb_name) == []
    rep = cli("report", db, "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    assert "RFC 2544 frame sizes: mrr" in (tmp_path / "rep" / "index.html").read_text()
    text = cli("flood", "--sizes", "60", "--db", db)  # below the IPv4 minimum: nothing built
    assert text.returncode == 2 and "60 bytes cannot be sent over IPv4" in text.stderr
    with Store(db, readonly=True) as st:
        assert len(list(st.experiments())) == len(SIZES)


def test_a_sweep_series_ends_with_its_table(tb_name, tmp_path, cli, netns_of):
    db = tmp_path / "w.db"
    res = cli(
        "sweep", "--name", tb_name, "--sut-cap", "100k", "--rates", "50k,150k", "--runs", "1",
        "--duration", "0.5s", "--settle", "0.2s", "--no-peak-check", "--db", db,
        "--sizes", "64,1514",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "frame size 1514 B (2/2 of the series)" in res.stderr
    table = res.stdout[res.stdout.index("frame-size series (sweep") :].splitlines()
    assert "PDR Mpps" in table[1] and "NDR Mpps" in table[1]
    rows = {int(r.split()[1]): r.split() for r in table[2:4]}
    assert set(rows) == {64, 1514}
    for row in rows.values():  # 50k carried, 150k over the cap: NDR 50 kpps, 0.0500 Mpps
        # (at least that when the 150 kpps trial was left out as a measurement fault)
        assert row[2] in ("0.0500", ">=0.0500"), table
    assert netns_of(tb_name) == []


def test_a_series_that_found_no_bound_says_at_least_and_inconclusive(tb_name, tmp_path, cli):
    """The router carries both loads at every size (no cap; 40 kpps is far below what it
    forwards): each sweep is INCONCLUSIVE, its bounds only at least 40 kpps, and the
    table ending the run says so."""
    db = tmp_path / "n.db"
    res = cli(
        "sweep", "--name", tb_name, "--rates", "20k,40k", "--runs", "1", "--duration", "0.3s",
        "--settle", "0.1s", "--no-peak-check", "--db", db, "--sizes", "64,1514",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    table = res.stdout[res.stdout.index("frame-size series (sweep") :].splitlines()
    assert table[1].split()[-1] == "verdict"
    for row in table[2:4]:
        cells = row.split()
        assert cells[2] == ">=0.0400" and cells[-1] == "INCONCLUSIVE", table
    notes = "\n".join(table[4:])
    assert ">= : at least this rate" in notes and "INCONCLUSIVE: 2 of 2 sizes" in notes


def test_a_series_on_a_testbed_that_is_up_is_refused_before_its_first_size(
    tb_name, tmp_path, cli, netns_of
):
    """'testbed up --name N' then 'sweep --name N --sizes ...': one line, exit 2, nothing
    measured nor stored, the testbed as it was (its frame size is its own; a series needs
    one per size, and netassay does not take down a testbed it did not build)."""
    up = cli("testbed", "up", "--name", tb_name)
    assert up.returncode == 0, up.stderr
    before = netns_of(tb_name)
    db = tmp_path / "v.db"
    res = cli("sweep", "--name", tb_name, "--sizes", "rfc2544", "--rates", "50k,200k",
              "--runs", "1", "--duration", "0.3s", "--db", db)  # fmt: skip
    assert res.returncode == 2, res.stderr
    [line] = res.stderr.splitlines()
    assert f"--sizes on testbed '{tb_name}', which is up with 64-byte frames" in line
    assert "leave --name off" in line and f"netassay testbed down --name {tb_name}" in line
    assert res.stdout == "" and not db.exists()
    assert netns_of(tb_name) == before
    assert cli("testbed", "down", "--name", tb_name).returncode == 0
