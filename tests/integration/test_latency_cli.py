"""sweep --latency: what it refuses before anything is built; the generator's flag."""

from __future__ import annotations

import re
import subprocess

import pytest
from tests.builders import store_with

from netassay.traffic.generator import find_generator


def _namespaces(name: str) -> set[str]:
    """The namespaces of testbed ``name`` (other testbeds may come and go meanwhile)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {ln.split()[0] for ln in out.stdout.splitlines() if ln.startswith(f"na-{name}-")}


def test_latency_with_the_nft_sink_is_refused_in_one_line(cli, tmp_path):
    db = tmp_path / "x.db"
    res = cli("sweep", "--latency", "--sink", "nft", "--db", db, "--name", "ltnft")
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "netassay: --latency needs the XDP sink: --sink nft keeps no latency histogram; "
        "use --sink xdp (the default) or xdp+nft"
    )
    assert _namespaces("ltnft") == set() and not db.exists()


def test_the_dry_run_takes_latency(cli, tmp_path):
    res = cli("sweep", "--latency", "--dry-run", "--db", tmp_path / "x.db", "--name", "ltdry")
    assert res.returncode == 0, res.stderr


def test_the_generator_refuses_latency_without_the_sink():
    cp = subprocess.run(
        [find_generator(), "--dev", "x", "--latency"], capture_output=True, text=True, check=False
    )
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.strip() == (
        "netassay-gen: --latency is an --xdp-sink option: add --xdp-sink or drop --latency"
    )
    help_text = subprocess.run([find_generator(), "--help"], capture_output=True, text=True)
    assert re.search(r"--latency\s+with --xdp-sink", help_text.stdout), help_text.stdout


def test_at_takes_the_stored_search_pdr(cli, tmp_path):
    db = store_with(tmp_path / "s.db", "search")  # a search measured on a real testbed
    res = cli("sweep", "--latency", "--at", "0,10%,50%,90%", "--db", db, "--dry-run")
    assert res.returncode == 0, res.stderr
    # its PDR@0.5% has the conditional throughput 102.3 kpps
    assert "loads (4): 1 kpps, 10.23 kpps, 51.16 kpps, 92.08 kpps" in res.stdout


@pytest.mark.slow
def test_at_is_refused_in_one_line_without_latency_or_a_search(cli, tmp_path):
    empty = store_with(tmp_path / "e.db", "soak")  # no search in it
    cases = [
        (("--at", "10%"), "--at needs --latency"),
        (("--latency", "--at", "10%", "--db", tmp_path / "none.db"), "does not exist"),
        (("--latency", "--at", "10%", "--of-pdr", empty), "no search that found a PDR"),
        (("--latency", "--at", "10%,120%"), "'120%' is not 0 or a share of the PDR"),
    ]
    for args, needle in cases:
        res = cli("sweep", *args, "--name", "ltat", "--dry-run")
        assert res.returncode == 2, (args, res.stderr)
        assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert _namespaces("ltat") == set()


def test_at_with_rates_is_refused_in_one_line(cli, tmp_path):
    db = tmp_path / "x.db"
    res = cli("sweep", "--latency", "--at", "50%", "--rates", "10k", "--db", db, "--name", "ltar")
    assert res.returncode == 2
    assert (
        res.stderr.strip()
        == "netassay: --at with --rates: --at picks the loads itself; drop one of them"
    )
    assert _namespaces("ltar") == set() and not db.exists()


def test_the_latency_command_takes_csits_shares_of_the_stored_pdr(cli, tmp_path):
    db = store_with(tmp_path / "s.db", "search")  # a search measured on a real testbed
    res = cli("latency", "--db", db, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "loads (4): 1 kpps, 10.23 kpps, 51.16 kpps, 92.08 kpps" in res.stdout
    res = cli("latency", "--db", db, "--at", "50%", "--dry-run")
    assert "loads (1): 51.16 kpps" in res.stdout, res.stdout


def test_the_latency_command_without_a_search_is_one_line(cli, tmp_path):
    db = tmp_path / "none.db"
    res = cli("latency", "--db", db, "--name", "ltcmd")
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert "--at needs a stored search's PDR" in line and "--rates" in line
    assert _namespaces("ltcmd") == set() and not db.exists()


@pytest.mark.slow
def test_assess_shows_a_stored_sweeps_latency_per_load(cli, tmp_path):
    """The golden sweep run with --latency (a router capped at 100 kpps, 30, 60 and 90
    kpps, two runs each): assess shows its percentiles per load under its verdict, text
    and --json, as the sweep's own view computes them (the mean of each run's); a sweep
    that kept none shows none."""
    import json

    from netassay.shared.sweep_latency import latency_rows
    from netassay.store.db import Store

    db = store_with(tmp_path / "s.db", "sweep")
    objs = [
        json.loads(line) for line in cli("assess", db, "--json", check=True).stdout.splitlines()
    ]
    lat, plain = sorted(objs, key=lambda o: o["label"])  # golden latency, golden sweep
    assert plain["label"] == "golden sweep" and "latency" not in plain
    assert lat["label"] == "golden latency"
    with Store(db, readonly=True) as st:
        exp = next(e for e in st.experiments() if e.label == "golden latency")
        want = [r.to_json() for r in latency_rows(st, exp.id)]
    assert lat["latency"] == json.loads(json.dumps(want))
    assert [r["rate_pps"] for r in lat["latency"]] == [30_000, 60_000, 90_000]
    for r in lat["latency"]:
        assert r["runs"] == 2 and 0 < r["p50_ns"] <= r["p90_ns"] <= r["p99_ns"] <= r["max_ns"]
    text = cli("assess", db, check=True).stdout
    block = text.split("golden latency")[1]
    assert "one-way latency (us; mean over the runs, +- its 95% CI):" in block
    assert text.split("golden latency")[0].count("one-way latency") == 0
    p50 = f"{lat['latency'][0]['p50_ns'] / 1e3:.1f}"
    assert p50 in block.split("one-way latency")[1].splitlines()[2]
