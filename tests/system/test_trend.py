"""netassay trend --db finds a regression of the data plane where it happened: a kernel
router capped at 200 kpps is flooded four times (each flood, 3 runs of 0.5 s, stored as
an experiment whose MRR is their median), then its cap is lowered to 150 kpps on the live
testbed with nft in the SUT's namespace (outside netassay's own settings, as a
regression of the data plane would be), and flooded four times more. One series, one
change of that order: a regression at the fifth flood of about -24% (the cap's bucket,
20 ms of 200 kpps, adds the same 4k frames, 8 kpps in 0.5 s, to both sides: 158k against
208k); the report's trend page shows it (headless Chromium).

Repeated commands on one testbed that stays up ('testbed up', then 'flood --name'): a
campaign runs its repetitions in one command, with no pause between two of them to
lower the cap from outside. Needs root and netassay-gen (skipped with the reason
otherwise).
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from netassay import names

pytestmark = pytest.mark.system

BEFORE, AFTER = 200_000, 150_000


def _nft(ns: str, *args: str) -> str:
    argv = ["ip", "netns", "exec", ns, "nft", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=10).stdout


def _lower_cap(name: str) -> None:
    """The cap's policer rule rewritten at AFTER pps, its bucket as it was."""
    ns = names.netns(name, "sut")
    listed = _nft(ns, "list", "chain", "netdev", "na_cap", "na_out")
    (rule,) = [line.strip() for line in listed.splitlines() if "limit rate over" in line]
    assert f"over {BEFORE}/second" in rule, rule
    _nft(ns, "flush", "chain", "netdev", "na_cap", "na_out")
    lowered = shlex.split(rule.replace(f"over {BEFORE}/", f"over {AFTER}/"))
    _nft(ns, "add", "rule", "netdev", "na_cap", "na_out", *lowered)
    assert f"over {AFTER}/second" in _nft(ns, "list", "chain", "netdev", "na_cap", "na_out")


@pytest.mark.slow
def test_trend_finds_a_lowered_cap(tb_name, tmp_path, cli, browser):
    db = tmp_path / "t.db"
    up = cli("testbed", "up", "--name", tb_name, "--sut", "router", "--sut-cap", "200k")
    assert up.returncode == 0, up.stderr
    for n in range(8):
        if n == 4:
            _lower_cap(tb_name)
        res = cli("flood", "--name", tb_name, "--runs", "3", "--duration", "0.5s", "--db", db,
                  "--label", f"flood {n + 1}", "--json")  # fmt: skip
        assert res.returncode == 0, res.stderr
    res = cli("trend", "--db", db, "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    (s,) = out["series"]
    values = [round(p["value"]) for p in s["points"]]
    print(f"MRR per flood {values}; groups {[(g['first'], g['last']) for g in s['groups']]}")
    assert s["method"] == "flood" and s["metric"] == "mrr_pps" and len(s["points"]) == 8
    # the cap's step, and nothing else of its order (a busy host may add a small group)
    (change,) = [c for c in s["changes"] if abs(c["relative"]) >= 0.10]
    print(f"change at point {change['at'] + 1}: {change['change']} {change['relative']:+.1%}")
    assert change["change"] == "regression" and change["at"] == 4, s["groups"]
    assert -0.30 < change["relative"] < -0.20, change
    text = cli("trend", "--db", db).stdout
    assert "regression -2" in text and "at point 5" in text, text
    gate = cli("trend", "--db", db, "--fail-on-regression")
    assert gate.returncode == (1 if out["regressions"] else 0), gate.stderr
    if s["groups"][-1]["first"] == 4:  # the step is the newest group: the gate refuses it
        assert out["regressions"][0]["series"] == s["id"] and gate.returncode == 1
        assert "regressed beyond 5.0%" in gate.stderr, gate.stderr
    assert cli("trend", "--db", db, "--fail-on-regression", "--threshold", "30%").returncode == 0
    assert cli("report", db, "--out", tmp_path / "r").returncode == 0
    page = browser.new_page()
    page.goto((tmp_path / "r" / "index.html").as_uri())
    page.click('a[href^="trend/"]')
    page.wait_for_load_state()
    assert page.locator("#points tbody tr").count() == 8
    assert page.locator("#points tbody tr").nth(4).locator("td.regression").count() == 1
    assert page.eval_on_selector("#trend-figure", "i => i.complete && i.naturalWidth") > 400
    page.close()
