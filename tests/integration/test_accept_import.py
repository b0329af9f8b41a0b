"""The acceptance importers against real outputs: MonIPE's published round (the figures
its CSVs hold, computed here from the CSVs; NETASSAY_DATA), the round written by hand in
tests/data/monipe, and iperf3 3.12 -J outputs made over loopback (tests/data/iperf3)."""

import csv
import json
import shutil
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

from netassay.analysis.acceptance import FAIL, judge
from netassay.errors import InputError
from netassay.methods.accept import import_iperf3, import_monipe
from netassay.methods.accept.view import summary

IPERF3 = FIXTURES / "iperf3"
ROUND = Path("teste_1") / "rodada_1"  # the one round of either folder


def _csv(folder: Path, name: str) -> list[dict[str, str]]:
    with open(next((folder / ROUND).glob(f"*{name}"))) as fh:
        return list(csv.DictReader(fh))


def test_monipe_round_imports_to_the_figures_its_csvs_hold(monipe_real):
    [test] = import_monipe.read_tests(monipe_real, 10e9, "payload")
    assert test.name == "teste_1" and len(test.runs) == 1
    run = test.runs[0]
    server = _csv(monipe_real, "iperf3_server.csv")
    nbytes = [float(r["total_bytes_transferidos"]) for r in server]
    rates = [float(r["taxa_de_bits_por_segundo"]) for r in server]
    lost = [int(r["total_pacotes_perdidos"]) for r in server]
    # each interval's rate is the CSV's, its length bytes over rate
    assert len(run.intervals) == len(server) == 11
    for iv, rate in zip(run.intervals, rates, strict=True):
        assert iv.payload_bps == pytest.approx(rate, rel=1e-9)
    # the run's mean receiver rate: the per-second rates weighted by their length
    seconds = sum(b * 8 / r for b, r in zip(nbytes, rates, strict=True))
    assert run.payload_bps() == pytest.approx(sum(nbytes) * 8 / seconds, rel=1e-9)
    full = [r for b, r in zip(nbytes, rates, strict=True) if b * 8 / r > 0.5]
    assert run.payload_bps() == pytest.approx(sum(full) / len(full), rel=1e-3)
    # loss: the receiver's rows add up to the sender's summary (its last row)
    client = _csv(monipe_real, "iperf3_client.csv")
    assert run.lost_packets == sum(lost) == int(client[-1]["pacotes_perdidos"]) == 27636
    assert run.loss_ratio() == pytest.approx(
        float(client[-1]["%_pacotes_perdidos"]) / 100, rel=1e-6
    )
    # per second, the loss share is the CSV's
    for iv, row in zip(run.intervals, server, strict=True):
        assert 100 * iv.loss_ratio == pytest.approx(
            float(row["porcentagem_pacotes_perdidos"]), abs=1e-4
        )
    assert run.datagram_bytes == 8948  # 9000-byte MTU, iperf3's default length
    # CPU per core: the mean of each mpstat column
    mp = _csv(monipe_real, "mpstat.csv")
    s = summary(test)
    for col in mp[0]:
        core = f"cpu{col.split('_')[1]}"
        want = sum(float(r[col]) for r in mp) / len(mp)
        assert s["cpu_busy_pct"][core] == pytest.approx(want, abs=0.01)
    v = judge(test)
    assert v.verdict == FAIL and "loss 1.99%" in v.reason  # no host counters in MonIPE's CSVs
    assert [f["interval"] for f in v.failed_seconds] == [0, 4, 5]  # a slow start, two lossy s
    assert v.throughput_bps == pytest.approx(run.payload_bps())


def test_the_hand_written_round_imports_to_its_figures(monipe_files):
    """The round of tests/data/monipe (its README gives the figures it was written with)."""
    [test] = import_monipe.read_tests(monipe_files, 900e6, "payload")
    [run] = test.runs
    assert len(run.intervals) == 6 and run.datagram_bytes == 1448
    assert run.lost_packets == 820 and run.loss_ratio() == pytest.approx(0.002)
    assert [iv.loss_ratio for iv in run.intervals] == [0, 0, 0.01, 0, 0, 0]
    assert summary(test)["cpu_busy_pct"] == {"cpu0": 10.6, "cpu1": 52.4}
    v = judge(test)
    assert v.verdict == FAIL and "loss 0.2%" in v.reason
    assert [f["interval"] for f in v.failed_seconds] == [2]


def test_monipe_test_folder_alone_and_missing_columns(monipe_files, tmp_path):
    [a] = import_monipe.read_tests(monipe_files / "teste_1", None, "payload")
    assert a.name == "teste_1" and a.contract_bps is None
    bad = tmp_path / "teste_9" / "rodada_1"
    shutil.copytree(monipe_files / ROUND, bad)
    f = next(bad.glob("*iperf3_server.csv"))
    rows = f.read_text().splitlines()
    f.write_text("\n".join(",".join(c.split(",")[:3]) for c in rows) + "\n")
    with pytest.raises(InputError, match=r"missing column.*total_pacotes_perdidos"):
        import_monipe.read_tests(tmp_path, None, "payload")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no MonIPE test in it"):
        import_monipe.read_tests(empty, None, "payload")


def test_monipe_reads_iperf3_json_beside_the_csvs(monipe_files, tmp_path):
    d = tmp_path / "teste_2" / "rodada_1"
    shutil.copytree(monipe_files / ROUND, d)
    shutil.copy(IPERF3 / "udp-50M-server.json", d / "rodada_1-teste_2-iperf3_server.json")
    [test] = import_monipe.read_tests(tmp_path, None, "payload")
    run = test.runs[0]
    doc = json.loads((IPERF3 / "udp-50M-server.json").read_text())
    assert run.payload_bps() == pytest.approx(doc["end"]["sum_received"]["bits_per_second"])
    assert run.tool_version == "3.12" and len(run.cpu) == 5  # the mpstat CSV's rows


def _doc(name: str) -> dict:
    return json.loads((IPERF3 / name).read_text())


def test_iperf3_server_output_gives_the_receivers_intervals():
    [res] = import_iperf3.read(IPERF3 / "udp-50M-server.json")
    assert res.role == "receiver" and res.end == "server"
    run = import_iperf3.to_run(1, res, None)
    rec = _doc("udp-50M-server.json")["end"]["sum_received"]
    assert run.intervals_side == "receiver"
    assert run.payload_bps() == pytest.approx(rec["bits_per_second"], rel=1e-9)
    assert run.lost_packets == rec["lost_packets"]
    assert run.received_packets == rec["packets"] - rec["lost_packets"]
    assert run.loss_ratio() == pytest.approx(rec["lost_percent"] / 100, rel=1e-9)
    assert sum(iv.packets + iv.lost for iv in run.intervals) == rec["packets"]
    assert run.datagram_bytes == 1448 and run.tool_version == "3.12" and run.ip_version == 4


def test_iperf3_client_output_alone_and_joined_with_its_server():
    [client] = import_iperf3.read(IPERF3 / "udp-50M-client.json")
    [server] = import_iperf3.read(IPERF3 / "udp-50M-server.json")
    assert client.role == "sender" and client.cookie == server.cookie
    alone = import_iperf3.to_run(1, None, client)
    assert alone.intervals_side == "sender"
    rec = _doc("udp-50M-client.json")["end"]["sum_received"]
    assert alone.payload_bps() == pytest.approx(rec["bits_per_second"], rel=1e-9)
    [test] = import_iperf3.build_tests([client, server], 50e6, "payload")
    [run] = test.runs
    assert run.intervals_side == "receiver"
    assert run.sent_packets == _doc("udp-50M-client.json")["end"]["sum_sent"]["packets"]
    assert run.sent_bytes == _doc("udp-50M-client.json")["end"]["sum_sent"]["bytes"]
    # sender intervals are not graded per second: the verdict says so
    v = judge(import_iperf3.build_tests([client], 50e6, "payload")[0])
    assert v.graded_seconds == 0 and "sender" in v.notes[0]


def test_iperf3_text_before_the_json_is_skipped():
    text = (IPERF3 / "udp-50M-server.json").read_text()
    a = import_iperf3.parse("iperf3: warning: something\nmore words\n" + text, "x")
    b = import_iperf3.parse(text, "y")
    assert a.doc == b.doc


def test_iperf3_malformed_outputs_are_input_errors():
    with pytest.raises(InputError, match=r"iperf3 reported an error.*Connection refused"):
        import_iperf3.read(IPERF3 / "error-refused.json")
    text = (IPERF3 / "udp-50M-server.json").read_text()
    with pytest.raises(InputError, match="truncated or malformed"):
        import_iperf3.parse(text[: len(text) // 2], "cut.json")
    with pytest.raises(InputError, match="no JSON object"):
        import_iperf3.parse("iperf3: error - unable to connect\n", "t.txt")
    tcp = json.loads(text)
    tcp["start"]["test_start"]["protocol"] = "TCP"
    with pytest.raises(InputError, match="not a UDP test"):
        import_iperf3.parse(json.dumps(tcp), "tcp.json")
    del tcp["end"]["sum_received"]
    tcp["start"]["test_start"]["protocol"] = "UDP"
    with pytest.raises(InputError, match=r"no end\.sum_received"):
        import_iperf3.parse(json.dumps(tcp), "end.json")


def test_a_server_file_of_two_tests_and_a_reverse_test_pair_with_their_clients():
    """A server run without -1 (stopped by a signal at the end) wrote two tests in one
    file; the second was -R, so its client received."""
    files = sorted(IPERF3.glob("*two-tests*"))
    results = [r for p in files for r in import_iperf3.read(p)]
    assert len(results) == 4  # the server's closing error object is not a test
    ends = {(r.cookie, r.role): r.end for r in results}
    [reverse] = [r for r in results if r.end == "client" and r.role == "receiver"]
    assert reverse.test_start["reverse"] and ends[(reverse.cookie, "sender")] == "server"
    [test] = import_iperf3.build_tests(results, 10e6, "payload")
    assert [r.intervals_side for r in test.runs] == ["receiver", "receiver"]
    for run, client in zip(test.runs, files[1:], strict=True):
        doc = json.loads(client.read_text())["end"]["sum_received"]
        assert run.payload_bps() == pytest.approx(doc["bits_per_second"], rel=1e-9)
    # the closing error object alone is still an error
    alone = (IPERF3 / "server-two-tests.json").read_text().rsplit("\n{", 1)[1]
    with pytest.raises(InputError, match="server has terminated"):
        import_iperf3.parse_all("{" + alone, "end.json")


def test_a_runs_raw_text_imports_to_the_same_run(tmp_path):
    files = [IPERF3 / "udp-50M-server.json", IPERF3 / "udp-50M-client.json"]
    [test] = import_iperf3.read_tests(files, 50e6, "payload")
    f = tmp_path / "raw.json"
    f.write_text(test.runs[0].raw)
    [again] = import_iperf3.read_tests([f], 50e6, "payload")
    a, b = test.runs[0], again.runs[0]
    assert (a.payload_bps(), a.lost_packets, a.sent_packets, a.intervals, a.intervals_side) == (
        b.payload_bps(),
        b.lost_packets,
        b.sent_packets,
        b.intervals,
        b.intervals_side,
    )
