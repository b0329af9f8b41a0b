"""netassay import iperf3 / import monipe / assess on acceptance tests, through the real
CLI: idempotent imports, malformed inputs (one line, exit 3, the store unchanged), and an
iperf3 run made here over loopback that imports to the numbers the run printed."""

import hashlib
import json
import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import FIXTURES, run_cli

MONIPE = FIXTURES / "monipe"  # a round written by hand (its README)
IPERF3 = FIXTURES / "iperf3"


def _dump(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


def _assess(db: Path) -> list[dict]:
    cp = run_cli("assess", db, "--json", check=True)
    return [json.loads(line) for line in cp.stdout.splitlines() if line.strip()]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "acc.db"
    cp = run_cli("import", "monipe", MONIPE, "--db", path, "--contract", "900M", "--layer",
                 "payload", check=True)  # fmt: skip
    assert "imported 1 acceptance test(s), 1 run(s)" in cp.stdout
    return path


@pytest.mark.slow
def test_import_twice_adds_nothing_and_assess_gives_the_fields(db):
    before = _dump(db)
    cp = run_cli("import", "monipe", MONIPE, "--db", db, "--contract", "900M", "--layer",
                 "payload", check=True)  # fmt: skip
    assert "imported 0 acceptance test(s)" in cp.stdout and "1 already stored" in cp.stdout
    assert _dump(db) == before
    [obj] = _assess(db)
    for k in ("source", "kind", "verdict", "reason", "contract_bps", "layer", "runs",
              "throughput_bps", "throughput_ci95_bps", "lost_packets", "loss_ratio",
              "failed_seconds", "cpu_busy_pct"):  # fmt: skip
        assert k in obj, k
    assert obj["kind"] == "accept" and obj["source"] == "monipe import"
    assert obj["contract_bps"] == 900e6 and obj["layer"] == "payload" and obj["runs"] == 1
    assert obj["verdict"] == "FAIL" and obj["lost_packets"] == 820
    assert set(obj["cpu_busy_pct"]) == {"cpu0", "cpu1"}
    text = run_cli("assess", db, check=True).stdout
    assert (
        "acceptance test 'teste_1'" in text and "FAIL" in text and "seconds failed: 1 of 5" in text
    )


def test_without_a_contract_the_verdict_says_none_was_given(tmp_path):
    path = tmp_path / "nc.db"
    run_cli("import", "iperf3", IPERF3 / "udp-50M-server.json", "--db", path, check=True)
    [obj] = _assess(path)
    assert obj["contract_bps"] is None and "no contract given" in obj["reason"]


@pytest.mark.parametrize("case", ["truncated", "error", "columns", "empty", "layer"])
def test_malformed_inputs_one_line_exit_3_store_unchanged(db, tmp_path, case):
    before = _dump(db)
    if case == "truncated":
        cut = tmp_path / "cut.json"
        text = (IPERF3 / "udp-50M-server.json").read_text()
        cut.write_text(text[: len(text) * 2 // 3])
        args = ["iperf3", IPERF3 / "udp-50M-client.json", cut]
    elif case == "error":
        args = ["iperf3", IPERF3 / "udp-50M-server.json", IPERF3 / "error-refused.json"]
    elif case == "columns":
        folder = tmp_path / "res"
        shutil.copytree(MONIPE, folder)
        f = next(folder.glob("teste_1/rodada_1/*mpstat.csv"))
        f.write_text("\n".join(line.replace("CPU_", "core") for line in f.read_text().splitlines()))
        args = ["monipe", folder]
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        args = ["monipe", tmp_path / "empty"]
    else:
        args = ["iperf3", IPERF3 / "udp-50M-server.json", "--layer", "l7"]
    cp = run_cli("import", *args, "--db", db)
    want = 2 if case == "layer" else 3
    assert cp.returncode == want, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("netassay: "), cp.stderr
    assert _dump(db) == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_an_iperf3_run_made_here_imports_to_its_own_numbers(tmp_path):
    """Real iperf3 over loopback (no root): the server's and the client's -J output."""
    if not shutil.which("iperf3"):
        pytest.fail("iperf3 is missing: 'make setup' installs it")
    port = str(_free_port())
    server_out = tmp_path / "server.json"
    client_out = tmp_path / "client.json"
    with open(server_out, "w") as fh:
        server = subprocess.Popen(
            ["iperf3", "-s", "-1", "-J", "-B", "127.0.0.1", "-p", port], stdout=fh
        )
        try:
            for _ in range(50):  # until the server listens
                cp = subprocess.run(
                    ["iperf3", "-c", "127.0.0.1", "-p", port, "-u", "-b", "20M", "-l", "1200",
                     "-t", "2", "-J"], capture_output=True, text=True, timeout=30,
                )  # fmt: skip
                if "Connection refused" not in cp.stdout:
                    break
                time.sleep(0.1)
            client_out.write_text(cp.stdout)
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
    live = json.loads(server_out.read_text())["end"]["sum_received"]
    db = tmp_path / "live.db"
    run_cli("import", "iperf3", server_out, client_out, "--db", db, "--contract", "20M",
            "--layer", "payload", check=True)  # fmt: skip
    [obj] = _assess(db)
    assert obj["runs"] == 1 and obj["source"] == "iperf3 import"
    assert obj["throughput_bps"] == pytest.approx(live["bits_per_second"], rel=1e-9)
    assert obj["lost_packets"] == live["lost_packets"]
    assert obj["loss_ratio"] == pytest.approx(live["lost_percent"] / 100, rel=1e-9)
    sent = json.loads(client_out.read_text())["end"]["sum_sent"]
    [run] = obj["per_run"]
    assert run["graded_seconds"] == 2  # the server's intervals: the receiver's seconds
    assert sent["packets"] >= live["packets"] - live["lost_packets"]
    want = "PASS" if live["lost_percent"] < 0.1 and live["bits_per_second"] >= 19e6 else "FAIL"
    assert obj["verdict"] == want, obj["reason"]
