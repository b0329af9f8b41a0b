"""netassay import ping: stored as rtt runs, idempotent, bad files refused whole."""

from __future__ import annotations

import json

from tests.unit.test_rtt_ping_import import PING_D


def test_import_ping_twice_and_compare(cli, tmp_path):
    f = tmp_path / "old-ping.txt"
    f.write_text(PING_D)
    db = tmp_path / "rtt.db"
    first = cli("import", "ping", str(f), "--db", str(db))
    assert first.returncode == 0 and "imported 1 ping run(s)" in first.stdout, first.stderr
    again = cli("import", "ping", str(f), "--db", str(db))
    assert "imported 0 ping run(s)" in again.stdout and "1 already stored" in again.stdout
    assert cli("db", "check", "--db", str(db)).returncode == 0
    res = cli("compare", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    (row,) = json.loads(res.stdout)["configurations"]
    assert row["runs"] == 1 and abs(row["latency_sent"]["median"] - 446_000) <= 446  # 0.1%


def test_a_bad_file_stores_nothing(cli, tmp_path):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(PING_D)
    bad.write_text(PING_D + "garbage line\n")
    db = tmp_path / "rtt.db"
    res = cli("import", "ping", str(good), str(bad), "--db", str(db))
    assert res.returncode == 3 and "bad.txt:11: not iputils ping output" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not db.exists()  # nothing stored: not even an empty store made
