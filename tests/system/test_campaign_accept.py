"""An accept campaign on the embedded link, on the in-process LocalCluster: two cells
(link capped at 110% and at 90% of a 100 Mbit/s contract), each 'netassay accept
--embedded' on the worker's testbed; the first PASSes and the second FAILs, each is
stored once with its runs, and 'compare' ranks them by throughput.

Needs root and iperf3 (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import shutil

import pytest

from netassay.methods.accept.store import load_accept_tests
from netassay.store.db import Store

pytestmark = pytest.mark.system

LINKS = """\
[campaign]
name = "links"
method = "accept"
seed = 1
[fixed]
contract = "100M"
runs = 1
duration = "2s"
ramp_step = "1s"
[factors]
link_cap = ["110M", "90M"]
"""


@pytest.mark.slow
def test_an_accept_campaign_passes_and_fails_the_known_links(tb_name, tmp_path, cli, netns_of):
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed (make apt)")
    spec, db = tmp_path / "links.toml", tmp_path / "camp.db"
    spec.write_text(LINKS)
    plan = cli("campaign", "plan", str(spec), "--json")
    assert plan.returncode == 0, plan.stderr
    assert [c["trials"] for c in json.loads(plan.stdout)["cells"]] == [5, 5]  # 4 ramp + 1 run
    res = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "2 of 2 cells stored" in res.stdout and "10 trials written" in res.stdout
    assert netns_of(tb_name) == []  # every cell removed its testbed
    again = cli("campaign", "run", str(spec), "--db", str(db), "--resume", "--name", tb_name)
    assert again.returncode == 0 and "0 cells and 0 trials written" in again.stdout

    with Store(db, readonly=True) as st:
        tests = list(load_accept_tests(st))
    assert len(tests) == 2  # each cell once
    for t in tests:
        assert len(t.runs) == 1 and len(t.ramp) == 4 and t.runs[0].intervals
        assert t.metadata["campaign"]["campaign"] == "links" and t.link["cap_bps"] > 0

    out = cli("compare", "--db", str(db), "--by", "cap", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    verdicts = {e["factors"]["link_cap"]: e["verdict"] for e in result["experiments"]}
    assert verdicts == {"110M": "PASS", "90M": "FAIL"}, result["experiments"]
    ranks = {g["levels"]["link_cap"]: g["rank"] for g in result["groups"]}
    assert ranks == {"110M": 1, "90M": 2}
    for e in result["experiments"]:
        assert e["throughput_bps"] > 0 and set(e["cpu_busy"]) >= {"cpu0", "cpu1"}, e
    text = cli("compare", "--db", str(db), "--by", "cap").stdout
    assert "#1 link_cap=110M: n=1 throughput" in text and "effect of link_cap on throughput" in text
