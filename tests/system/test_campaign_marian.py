"""examples/marian.toml, short (two loads, one run each): a sweep campaign with the
SUT's receive work bound and balanced; each cell records its affinity with the
experiment and the CPUs the testbed steered to, and every stored trial carries its
loss location, which accounts for every frame sent and not received.

Needs root, two CPUs and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from netassay.store.db import Store

pytestmark = pytest.mark.system

EXAMPLE = Path(__file__).parents[2] / "examples" / "marian.toml"
CPUS = {"bound": [1], "balanced": [0, 1]}


@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_marian_campaign_bound_vs_balanced(tb_name, tmp_path, cli, netns_of):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("bound and balanced differ only with two CPUs or more")
    text = EXAMPLE.read_text()
    short = re.sub(r'rates = ".*"', 'rates = "100k,450k"', text).replace("runs = 2", "runs = 1")
    assert short != text
    spec = tmp_path / "marian.toml"
    spec.write_text(short)
    plan = cli("campaign", "plan", str(EXAMPLE))
    assert plan.returncode == 0, plan.stderr
    assert "factors: rx_affinity = bound, balanced" in plan.stdout
    db = tmp_path / "marian.db"
    res = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "2 of 2 cells stored" in res.stdout
    assert netns_of(tb_name) == []
    with Store(db, readonly=True) as st:
        exps = list(st.experiments())
        assert sorted(e.metadata["rx_affinity"] for e in exps) == ["balanced", "bound"]
        for e in exps:
            rx = e.metadata["rx_affinity"]
            assert e.metadata["campaign"]["factors"] == {"rx_affinity": rx}
            testbed = st.runs(e.id)[0]["environment"]["testbed"]
            assert testbed["config"]["rx_affinity"] == rx and testbed["sut_cpus"] == CPUS[rx]
            trials = st.trials(e.id)
            assert len(trials) == 2
            for t in trials:
                loss = dict(t["loss_location"])
                assert loss.pop("unsent") >= 0  # the generator's shortfall, never SUT loss
                assert sum(loss.values()) == t["sent"] - t["received"], t
    out = cli("compare", "--db", str(db), "--by", "rx_affinity")
    assert out.returncode == 0, out.stderr
    assert "rx_affinity=bound" in out.stdout and "rx_affinity=balanced" in out.stdout
