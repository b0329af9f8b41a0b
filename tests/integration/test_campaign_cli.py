"""netassay campaign plan: the file resolved, its cells, order and time; bad files refused
with one line per problem; the seed recorded in a store is the one a plan shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netassay.store.db import Store

ROOT = Path(__file__).resolve().parents[2]


def test_plan_of_the_minimal_file(cli):
    res = cli("campaign", "plan", ROOT / "examples" / "caps.toml")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "cells: 2 (full factorial) x 1 repetition(s) = 2 experiments" in out
    assert "sut_cap=100k" in out and "sut_cap=180k" in out and "9 loads x 2 runs x 1 s" in out
    assert "trials: 36 planned" in out and "estimated time: 1 min" in out
    assert "drawn now" in out


def test_plan_json_is_reproducible_with_a_seed(cli, tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(
        '[campaign]\nname = "p"\nrepetitions = 3\nseed = 9\n[fixed]\nrates = "100k,200k"\n'
        'runs = 1\nduration = "1s"\n[factors]\nbacklog = [1000, 5000, 10000]\n'
        'pinning = ["pin-1cpu", "pin-2cpu"]\n'
    )
    a = json.loads(cli("campaign", "plan", f, "--json").stdout)
    b = json.loads(cli("campaign", "plan", f, "--json").stdout)
    assert a == b and a["seed"] == 9 and a["seed_origin"] == "set in the file"
    assert len(a["cells"]) == 6 and len(a["order"]) == 18
    for block in (1, 2, 3):
        cells = sorted(o["cell"] for o in a["order"] if o["block"] == block)
        assert cells == [1, 2, 3, 4, 5, 6]
    assert a["order"][0]["key"].startswith("campaign-p-b1-c")


def test_the_seed_recorded_in_a_store(cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[campaign]\nname = "s"\n[factors]\nruns = [1, 2]\n')
    db = tmp_path / "s.db"
    with Store(db) as st:
        st.add_campaign("s", 4242, {"name": "s"})
    res = cli("campaign", "plan", f, "--db", db)
    assert res.returncode == 0, res.stderr
    assert f"seed: 4242 (recorded in {db})" in res.stdout


def test_bad_file_one_line_per_problem(cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('[campaign]\nname = "b"\n[fixed]\nrunz = 3\nduration = "fast"\n')
    res = cli("campaign", "plan", f)
    assert res.returncode == 3
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2
    assert f"{f}:4: unknown key 'runz' in [fixed]" in lines[0]
    assert f"{f}:5: [fixed] duration = 'fast'" in lines[1]
    missing = cli("campaign", "plan", tmp_path / "nope.toml")
    assert missing.returncode == 3 and "no such campaign file" in missing.stderr


@pytest.mark.slow
def test_a_cell_whose_settings_clash_is_refused_before_any_cell_runs(cli, tmp_path):
    """Each cell's settings are checked as its command checks them: a batching cell with
    a flush timeout but neither GRO nor XDP (which give the veth its NAPI) is refused by
    plan and run alike, at the file's line, before anything is built or stored; the
    coherent cells' plan names their runs."""
    f = tmp_path / "b.toml"
    f.write_text('[campaign]\nname = "b"\nmethod = "batching"\n[fixed]\ngro = "off"\n'
                 'flush = "500us"\ndefer = 100\n[factors]\nxdp = ["on", "off"]\n')  # fmt: skip
    for args in (("plan", f), ("run", f, "--db", tmp_path / "b.db")):
        res = cli("campaign", *args)
        assert res.returncode == 3, res.stderr
        (line,) = res.stderr.strip().splitlines()
        assert f"{f}:8: cell 2 (xdp=off): --flush, --defer and --threaded need --gro on" in line
    assert not (tmp_path / "b.db").exists()
    f.write_text(f.read_text().replace('["on", "off"]', '["on"]'))
    res = cli("campaign", "plan", f)
    assert res.returncode == 0, res.stderr
    assert "xdp=on  [3 runs x 2000 probes at 10k/s]" in res.stdout


def test_a_batching_campaign_varies_busy_polling(cli, tmp_path):
    """busy_poll is a batching cell's key: its levels are cells, each plan line says its
    busy polling, and a cell where it cannot act (ICMP probes: no socket of netassay's)
    is refused at the file's line before anything is built or stored."""
    f = tmp_path / "bp.toml"
    f.write_text('[campaign]\nname = "bp"\nmethod = "batching"\n[fixed]\nprobe = "udp"\n'
                 'gro = "on"\nflush = "500us"\ndefer = 100\n[factors]\n'
                 'busy_poll = [0, 50]\n')  # fmt: skip
    res = cli("campaign", "plan", f)
    assert res.returncode == 0, res.stderr
    assert "busy_poll=0  [3 runs x 2000 probes at 10k/s]" in res.stdout
    assert "busy_poll=50  [3 runs x 2000 probes at 10k/s, busy-poll 50 us]" in res.stdout
    f.write_text(f.read_text().replace('probe = "udp"', 'probe = "icmp"'))
    res = cli("campaign", "run", f, "--db", tmp_path / "bp.db")
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"{f}:9: cell 2 (busy_poll=50): --busy-poll needs --probe udp" in line
    assert not (tmp_path / "bp.db").exists()


def test_plan_of_a_bidirectional_cell_says_its_loads_are_per_direction(cli):
    res = cli("campaign", "plan", ROOT / "examples" / "both-ways.toml")
    assert res.returncode == 0, res.stderr
    one, both = (x for x in res.stdout.splitlines() if "bidirectional=" in x and "[" in x)
    assert "bidirectional=False  [20 kpps..100 kpps, 5 loads x 2 runs x 1 s]" in one
    assert "bidirectional=True  [20 kpps..100 kpps per direction, both at once, 5 loads" in both


def _both_ways_plan(cli, tmp_path, method: str, fixed: str) -> tuple[str, str]:
    """``campaign plan`` of a ``method`` campaign whose factor is bidirectional: its
    one-way cell's line and its bidirectional cell's."""
    f = tmp_path / f"{method}.toml"
    f.write_text(f'[campaign]\nname = "b"\nmethod = "{method}"\n[fixed]\n{fixed}\n'
                 "[factors]\nbidirectional = [false, true]\n")  # fmt: skip
    res = cli("campaign", "plan", f)
    assert res.returncode == 0, res.stderr
    one, both = (x for x in res.stdout.splitlines() if "bidirectional=" in x)
    return one, both


def test_plan_of_a_bidirectional_search_cell_says_its_loads_are_aggregate(cli, tmp_path):
    one, both = _both_ways_plan(cli, tmp_path, "search", 'max_load = "120k"')
    assert "[" not in one
    assert "bidirectional=True  [both directions at once, aggregate loads (half per direc" in both


def test_plan_of_a_bidirectional_flood_cell_says_so(cli, tmp_path):
    one, both = _both_ways_plan(cli, tmp_path, "flood", "runs = 2")
    assert "both directions" not in one
    assert "floods x 2s, both directions at once (rates aggregate)]" in both
