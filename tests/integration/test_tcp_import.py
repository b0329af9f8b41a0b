"""iperf3 TCP results imported as TCP cells: a real client's output of a reno transfer
over the embedded 20 ms path with random loss 1e-3 (tests/data/iperf3), next to a UDP
file in the same call; assess, report, export and a second import see it as one cell."""

from __future__ import annotations

import json

import pytest
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "iperf3"
TCP = DATA / "tcp-reno-20ms-loss1e-3-client.json"


@pytest.mark.slow
def test_tcp_and_udp_files_go_each_to_their_method(cli, tmp_path):
    db = tmp_path / "i.db"
    res = cli("import", "iperf3", TCP, DATA / "udp-50M-server.json", "--db", db, check=True)
    assert "imported 1 TCP cell(s), 1 run(s)" in res.stdout
    assert "imported 1 acceptance test(s)" in res.stdout
    again = cli("import", "iperf3", TCP, "--db", db, check=True)
    assert "imported 0 TCP cell(s), 0 run(s); 1 already stored, skipped" in again.stdout
    objs = [json.loads(x) for x in cli("assess", db, "--json", check=True).stdout.splitlines()]
    (cell,) = [o for o in objs if o.get("method") == "tcp"]
    assert cell["config"]["cc"] == "reno" and cell["config"]["delay_s"] is None
    assert abs(cell["throughput_bps"] - 22.6e6) < 1e6 and cell["retransmits"] == 3
    (run,) = cell["run_details"]
    assert run["mss_bytes"] == 1448 and run["snd_wnd_max_bytes"] > 1_000_000
    text = cli("assess", db, check=True).stdout
    assert "imported from iperf3" in text and "smallest RTT sample 40.1" in text
    out = tmp_path / "r"
    cli("report", db, "--out", out, check=True)
    assert "TCP over a lossy long path" in (out / "index.html").read_text()
    pq = tmp_path / "pq"
    said = cli("export", "--db", db, "--format", "parquet", "--out", pq, check=True).stdout
    assert "tcp_runs 1" in said

    import pyarrow.parquet as pq_

    t = pq_.read_table(pq / "tcp_runs.parquet")
    assert t.column("retransmits").to_pylist() == [3]
    assert t.column("cc").to_pylist() == ["reno"]


def test_a_tcp_servers_output_is_refused_in_one_line(cli, tmp_path):
    body = json.loads(TCP.read_text())
    del body["start"]["connecting_to"]  # what a server's output lacks
    f = tmp_path / "server.json"
    f.write_text(json.dumps(body))
    db = tmp_path / "i.db"
    res = cli("import", "iperf3", f, "--db", db)
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "a TCP server's output" in line and "iperf3 -c" in line
    assert not db.exists()
