"""netassay soak on the router testbed with its ground truth, a cap of 100 kpps at the
SUT's egress: 80 kpps held for 6 s (three stored segments of 2 s, read every second)
loses nothing (PASS, no event); 120 kpps for 10 s loses about a sixth at the cap
(FAIL, loss located at sut_egress, an event). Both are gated with --fail-on fail: the
PASS exits 0, the FAIL 11, both stored. assess, export and report read the store,
and the report holds the soak's timeline.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.store.db import Store

pytestmark = pytest.mark.system


def _soak(cli, name, db, rate, duration, segment, code):
    """A soak gated with --fail-on fail: exit ``code`` (0 on PASS, 11 on FAIL), its
    result printed and stored either way."""
    res = cli(
        "soak", "--name", name, "--sut", "router", "--sut-cap", "100k", "--rate", rate,
        "--duration", duration, "--segment-length", segment, "--db", db, "--json",
        "--fail-on", "fail",
    )  # fmt: skip
    assert res.returncode == code, res.stderr + res.stdout
    if code:
        assert "--fail-on fail: 1 verdict(s) refused" in res.stderr, res.stderr
    print(res.stderr)
    return json.loads(res.stdout)


@pytest.mark.slow
def test_a_soak_below_the_cap_passes_and_above_it_fails(tb_name, tmp_path, cli, netns_of):
    db = tmp_path / "s.db"
    below = _soak(cli, tb_name, db, "80k", "6s", "2s", 0)
    print({k: below[k] for k in ("verdict", "loss_ratio", "events", "seconds", "sent")})
    assert below["verdict"] == "PASS", below
    assert below["events"] == [] and below["loss_ratio"] == 0.0, below
    assert below["segments_stored"] == 3 and 4 <= below["seconds"] <= 8, below
    assert netns_of(tb_name) == []  # the testbed it built is gone
    with Store(db, readonly=True) as st:
        (exp,) = st.experiments()
        trials = st.trials(exp.id)
    assert exp.kind == "soak" and [t["repetition"] for t in trials] == [0, 1, 2]
    seconds = [s for t in trials for s in t["counters"]["soak"]["per_second"]]
    assert sum(s["received"] for s in seconds) == sum(t["received"] for t in trials)
    assert all(0.5 <= s["dt"] <= 1.5 and s["cpu_busy"] for s in seconds), seconds
    rates = [s["received"] / s["dt"] for s in seconds[1:-1]]
    assert all(abs(r - 80_000) <= 0.1 * 80_000 for r in rates), rates

    above = _soak(cli, tb_name, db, "120k", "10s", "5s", 11)
    print({k: above[k] for k in ("verdict", "loss_ratio", "events", "loss_location")})
    assert above["verdict"] == "FAIL", above
    assert 0.1 <= above["loss_ratio"] <= 0.25, above  # 1 - 100/120 = 0.167, less the bucket
    assert above["loss_location"].get("sut_egress", 0) > 0.9 * (above["sent"] - above["forwarded"])
    assert len(above["events"]) >= 1 and above["events"][0]["seconds"] >= 5, above

    verdicts = [json.loads(line) for line in cli("assess", db, "--json").stdout.splitlines()]
    assert [v["verdict"] for v in verdicts] == ["PASS", "FAIL"]
    failed = cli("assess", db, "--fail-on", "fail")
    assert failed.returncode == 11, failed.stderr
    rows = cli("export", "--db", db, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(r)["experiment_kind"] for r in rows] == ["soak"] * 5
    rep = cli("report", db, "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    figures = sorted(
        p.name for p in (tmp_path / "rep" / "figures").glob("soak_*") if p.suffix != ".key"
    )
    assert len(figures) == 4, figures  # two soaks, PNG and SVG each (and each one's key)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "soak: soak 120 kpps" in page or "soak: soak 120" in page, page[:2000]
