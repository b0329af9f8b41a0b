"""An rtt campaign on real namespaces, on the in-process LocalCluster: two cells whose
responder holds each reply 0 and 1 ms (the ground truth); each cell is 'netassay rtt' on
the worker's testbed, stored once with its rtt_runs, and 'compare' ranks the lower RTT
first with the hold as the shift of the RTT's median.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.methods.rtt import store
from netassay.store.db import Store

pytestmark = pytest.mark.system

# the responder holds each reply 0 or 1 ms; 3 runs of 200 UDP probes at 400/s on veth
FIXED = {"path": "veth", "probe": "udp", "rate": "400", "count": 200, "runs": 3}
HOLDS = "\n".join(
    ['[campaign]\nname = "holds"\nmethod = "rtt"\nseed = 2\n[fixed]']
    + [f"{k} = {json.dumps(v)}" for k, v in FIXED.items()]
    + ['[factors]\nresponder_delay = ["0", "1ms"]\n']
)
TOLERANCE_NS = 100_000  # as test_rtt_method's bound on the RTT's growth: 2 x 25 us + D / 20


@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_an_rtt_campaign_measures_its_ground_truth_hold(tb_name, tmp_path, cli, netns_of):
    spec, db = tmp_path / "holds.toml", tmp_path / "rtt.db"
    spec.write_text(HOLDS)
    res = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "2 of 2 cells stored" in res.stdout and "6 trials written" in res.stdout
    assert netns_of(tb_name) == []
    with Store(db, readonly=True) as st:
        exps = list(store.rtt_experiments(st))
        assert len(exps) == 2 and all(len(store.runs(st, e.id)) == 3 for e in exps)
        assert st.conn.execute("SELECT count(*) FROM rtt_runs").fetchone()[0] == 6
    out = cli("compare", "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    ranks = {g["levels"]["responder_delay"]: g["rank"] for g in result["groups"]}
    assert ranks == {"0": 1, "1ms": 2}
    (cmp,) = result["effects"][0]["comparisons"]
    assert abs(cmp["hodges_lehmann_ns"] - 1_000_000) <= TOLERANCE_NS, cmp
