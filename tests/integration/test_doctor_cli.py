"""netassay doctor refuses bad input in one line, exit 2, before it builds or stores
anything; a stored doctor run (the golden store's, measured here) is read back by
assess, report and export with every check it judged."""

from __future__ import annotations

import json

import pytest
from tests.builders import store_with

from netassay.methods.doctor import checks


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--runs", "0"), "bad --runs 0"),
        (("--low-load", "fast"), "bad rate 'fast'"),
        (("--frames", "10"), "bad --frames 10"),
        (("--drop", "2"), "bad --drop 2"),
        (("--drop", "0"), "bad --drop 0"),
        (("--frames", "100M", "--low-load", "1k"), "would last over 10 minutes"),
        (("--sut-cap", "100k"), "doctor takes no --sut-cap"),
        (("--sut", "bridge", "--sink", "nft"), "doctor takes no --sut, --sink"),
        (("--name", "BAD!"), "bad testbed name 'BAD!'"),
        (("--fail-on", "never"), "unknown --fail-on 'never'"),
        (("--bogus",), "unknown flag --bogus for 'netassay doctor'"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    res = cli("doctor", *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert needle in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    assert not (tmp_path / "netassay.db").exists()


def test_help_names_what_it_checks(cli):
    res = cli("doctor", "--help", check=True)
    for word in ("--quick", "--low-load", "--frames", "--cap", "--drop", "--json", "ground"):
        assert word in res.stdout


def test_a_stored_run_is_read_back_with_every_check(cli, tmp_path):
    db = store_with(tmp_path / "doctor.db", "doctor")
    (obj,) = [
        json.loads(line) for line in cli("assess", db, "--json", check=True).stdout.splitlines()
    ]
    names = [c["name"] for c in obj["checks"]]
    assert names[:2] == ["cpu governor", "smt"] and names[-1] == "trusted range"
    assert {"false loss", "router mrr", "ground truth: cap", "ground truth: drop"} <= set(names)
    assert obj["finished"] and obj["verdict"] == checks.verdict(
        [checks.Check(c["name"], c["status"], "") for c in obj["checks"]]
    )
    assert obj["trusted_pps"] == obj["checks"][-1]["value"]["trusted_pps"] > 0
    truths = {c["name"]: c for c in obj["checks"] if c["name"].startswith("ground truth")}
    assert all(c["status"] == checks.PASS for c in truths.values()), truths  # measured so
    text = cli("assess", db, check=True).stdout
    assert "PASS  ground truth: cap" in text and "verdict: " in text
    rows = [
        json.loads(x)
        for x in cli("export", "--db", db, "--format", "jsonl", check=True).stdout.splitlines()
    ]
    # its trials: the false-loss trials, the flood, the cap's and the drop's
    assert sorted({r["load_index"] for r in rows}) == [0, 1, 2, 3]
