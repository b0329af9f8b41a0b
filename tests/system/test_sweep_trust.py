"""What a sweep across the kernel router's saturation point says is only what the SUT
did: no loss located at the sink is counted in the SUT's PLR, the loss-location split
sums exactly to the loss for every trial, and the assessment uses exactly the trials
that are not measurement faults."""

from __future__ import annotations

import json
import os

import pytest

from netassay.counters.loss import LOCATIONS, SINK_LOCATIONS
from netassay.store import Store

pytestmark = pytest.mark.system

RATES = [150_000, 300_000, 420_000]


@pytest.mark.parametrize("sink", ["nft", "xdp"])
@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_sink_drops_never_count_as_sut_loss_and_the_split_balances(tb_name, tmp_path, cli, sink):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("pin-2cpu needs two CPUs")
    db = tmp_path / "trust.db"
    res = cli(
        "sweep", "--name", tb_name, "--pinning", "pin-2cpu", "--backlog", "10000",
        "--sink", sink, "--rates", ",".join(map(str, RATES)), "--runs", "2",
        "--duration", "1s", "--settle", "0.2s", "--retries", "0", "--no-peak-check",
        "--db", str(db),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    with Store(db) as st:
        [exp] = list(st.experiments())
        trials = st.trials(exp.id)
    assert len(trials) == len(RATES) * 2
    for t in trials:
        loc = t["loss_location"]
        assert set(loc) == set(LOCATIONS)
        lost = t["sent"] - t["received"]
        assert sum(v for k, v in loc.items() if k != "unsent") == lost, loc
        assert t["sink_dropped"] == sum(loc[k] for k in SINK_LOCATIONS), loc
        if not t["excluded"]:
            assert loc["unaccounted"] == 0, (loc, t["warnings"])
        if t["sink_dropped"]:
            assert any(w.startswith("sink drops") for w in t["warnings"])
    a = json.loads(cli("assess", str(db), "--json").stdout.splitlines()[0])
    for i, rate in enumerate(RATES):
        used = [t for t in trials if t["load_index"] == i and not t["excluded"]]
        if not used:
            continue
        plr = sum(1 - (t["received"] + t["sink_dropped"]) / t["sent"] for t in used) / len(used)
        load = a["loads"][i]
        assert load["rate_pps"] == rate and load["k"] == len(used)
        assert load["plr"] == pytest.approx(plr, abs=1e-12)
