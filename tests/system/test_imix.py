"""IMIX: a sweep of ``--imix simple`` at low load on the kernel router, its
ground truth the mix itself. The router drops nothing at these loads, so every frame of
every size the generator sent must reach the XDP sink, which counts each size on its
own: received per size equals sent per size exactly in every trial, and what was sent
holds the 7:4:1 proportion exactly over the whole cycles of 12 frames (the rest, fewer
than 12 frames, in the cycle's fixed order). The sink's latency histogram holds every
frame of the mix. The sweep's JSON states the mix and its rates in bit/s at L2 and L1.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.hist import SinkHist
from netassay.imix import cycle, parse_imix
from netassay.store.db import Store

pytestmark = pytest.mark.system

RATES = (5_000, 20_000)


@pytest.mark.slow
def test_an_imix_sweep_at_low_load_counts_every_size_exactly(tb_name, tmp_path, cli):
    db = tmp_path / "imix.db"
    res = cli(
        "sweep", "--name", tb_name, "--sut", "router", "--imix", "simple", "--rates",
        ",".join(map(str, RATES)), "--runs", "2", "--duration", "1s", "--settle", "0.2s",
        "--latency", "--no-peak-check", "--db", db, "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    mix = parse_imix("simple", 4)
    order = [str(s) for s in cycle(mix)]
    with Store(db, readonly=True) as store:
        (exp,) = list(store.experiments())
        trials = store.trial_records(exp.id)
    assert exp.config["testbed"]["imix"] == "simple"
    assert len(trials) == len(RATES) * 2
    for t in trials:
        sizes = t.counters["imix"]["sizes"]
        print(t.rate_pps, t.sent, t.received, sizes, t.warnings)
        assert t.counters["imix"]["mix"] == "64:7,590:4,1514:1"
        assert not t.excluded and t.sent == t.received > 0
        assert {s: n["received"] for s, n in sizes.items()} == {
            s: n["sent"] for s, n in sizes.items()
        }
        assert sum(n["sent"] for n in sizes.values()) == t.sent
        assert SinkHist(t.counters["latency"]).n == t.received  # every size's latency
        whole, rest = divmod(t.sent, 12)
        expect = {"64": 7 * whole, "590": 4 * whole, "1514": whole}
        for s in order[:rest]:
            expect[s] += 1
        assert {s: n["sent"] for s, n in sizes.items()} == expect
    assert [x["rate_pps"] for x in out["latency"]] == list(RATES)
    view = out["imix"]
    assert view["imix"] == "64:7,590:4,1514:1"
    assert [x["rate_pps"] for x in view["loads"]] == list(RATES)
    for load in view["loads"]:
        assert load["loss_ratio"] == 0 and load["sent"] == load["received"]
        # 7*64 + 4*590 + 1514 = 4322 bytes per 12 frames: +4 B FCS (L2), +24 B (L1)
        assert load["rate_bps_l2"] == pytest.approx(load["rate_pps"] * 8 * (4322 / 12 + 4))
        assert load["rate_bps_l1"] == pytest.approx(load["rate_pps"] * 8 * (4322 / 12 + 24))
        assert {s: n["loss_ratio"] for s, n in load["sizes"].items()} == dict.fromkeys(
            ("64", "590", "1514"), 0
        )
    # the report's sweep section says the mix and has its table: a row per load, the
    # counts of each size as the store holds them
    report = cli("report", db, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report" / "index.html").read_text()
    assert "Frame mix 64:7,590:4,1514:1 (sizes without the FCS; mean 360.2 B)" in html
    first = view["loads"][0]["sizes"]
    assert f"<td>{first['1514']['sent']:,} / {first['1514']['received']:,}</td>" in html
    assert f"<td>{RATES[0]:,}</td>" in html
