"""Loss in the test host is never a FAIL of the link, on real cases.

- iperf3 3.12 at 1 Gbit/s of payload over a clean veth link (no cap, no loss): its
  server's socket overflows (measured when the issue was written: 0.63% lost, all
  UdpRcvbufErrors, 19,549 in 4 s). The verdict must be INCONCLUSIVE host-limited,
  with the receiver's socket buffer named when its counter moved.
- A receiving host whose CPU is taken by busy processes (stress-ng, two workers pinned
  to the receiver's CPU) at 200 Mbit/s: INCONCLUSIVE host-limited, never FAIL; the core
  named when it was saturated over the run, else the host's counter that saw the loss.

Also: the JSON a live iperf3 run kept (AcceptRun.raw), imported with 'netassay import
iperf3', gives the same numbers as the live run.
"""

from __future__ import annotations

import json

import pytest

from netassay.analysis.acceptance import CPU_SATURATED
from netassay.methods.accept.request import AcceptRequest, Scenario
from netassay.methods.accept.run import measure
from netassay.methods.accept.store import load_accept_tests
from netassay.store.db import Store

pytestmark = pytest.mark.system


def test_iperf3_at_1g_on_a_clean_link_is_host_limited(tb_name):
    req = AcceptRequest(contract_bps=1e9, layer="payload", sender="iperf3", runs=1,
                        duration_s=4, ramp=False, name=tb_name)  # fmt: skip
    res = measure(req)
    v, run = res.verdict, res.test.runs[0]
    assert res.test.link["cap_bps"] is None and res.test.link["drop"] == 0
    assert v.verdict != "FAIL", v.reason
    if v.verdict == "PASS":  # right when the host kept up: loss below the threshold
        assert run.loss_ratio() is not None and run.loss_ratio() < 0.001, v.reason
        pytest.skip(f"the host kept up with iperf3 at 1 Gbit/s this time: {v.reason}")
    assert v.verdict == "INCONCLUSIVE" and "host-limited" in v.reason, v.reason
    if run.host.get("receiver.udp_rcvbuf_errors", 0) > 0:
        assert "receiver socket buffer" in v.reason
        assert run.lost_packets <= run.host["receiver.udp_rcvbuf_errors"] + run.host.get(
            "veth.l1.tx_dropped", 0
        )
    # the facts the verdict stands on are kept with the run
    hc = run.host_config
    assert hc["tool"]["version"].startswith("3.") and "mitigations" in hc
    assert hc["sysctls"]["net.core.rmem_default"] and hc["mtu"] == 1500


def test_busy_receiver_is_host_limited(tb_name):
    scenario = Scenario(name="busy receiver", busy_receiver=2)
    req = AcceptRequest(contract_bps=200e6, layer="ethernet", sender="iperf3", runs=1,
                        duration_s=3, ramp=False, name=tb_name, scenario=scenario)  # fmt: skip
    res = measure(req)
    v, run = res.verdict, res.test.runs[0]
    if v.verdict == "PASS":  # the premise, a run that misses, did not happen
        pytest.skip(f"this host carried the contract beside the busy receiver ({v.reason}): "
                    "no miss to attribute to the host")  # fmt: skip
    assert v.verdict == "INCONCLUSIVE" and "host-limited" in v.reason, v.reason
    assert run.host_config["busy_receiver"] == 2
    seconds = [s.cores["cpu1"]["busy"] for s in run.cpu]  # the receiver's core, per second
    assert max(seconds) >= CPU_SATURATED, seconds  # stress-ng held it, for a second at least
    if run.cpu_busy()["cpu1"] >= CPU_SATURATED:  # saturated over the run: named
        assert "receiver cpu1" in v.reason, (v.reason, seconds)
        return
    # not saturated over the run (stress-ng held the core part of the time, and the
    # receiver kept up the rest: a CI run lost 2.23% there, all in the socket buffer):
    # the core is not named, and the loss is put where the host's counter saw it
    assert "cpu1" not in v.reason, (v.reason, seconds)
    rcvbuf = run.host.get("receiver.udp_rcvbuf_errors", 0)
    assert rcvbuf > 0 and "receiver socket buffer" in v.reason, (v.reason, run.host)
    assert run.lost_packets <= rcvbuf + run.host.get("veth.l1.tx_dropped", 0), run.host


def _json_texts(raw: str) -> list[str]:
    """The iperf3 JSON outputs kept verbatim, one after the other, in a run's raw."""
    dec, out, pos = json.JSONDecoder(), [], 0
    while pos < len(raw):
        if raw[pos].isspace():
            pos += 1
            continue
        _, end = dec.raw_decode(raw, pos)
        out.append(raw[pos:end])
        pos = end
    return out


def test_live_iperf3_json_imports_to_the_same_numbers(cli, tb_name, tmp_path):
    db = tmp_path / "live.db"
    req = AcceptRequest(contract_bps=100e6, layer="payload", sender="iperf3", runs=1,
                        duration_s=2, ramp=False, name=tb_name, db=str(db))  # fmt: skip
    live = measure(req).test.runs[0]
    files = []
    for i, text in enumerate(_json_texts(live.raw)):  # the server's output, the client's
        f = tmp_path / f"iperf3-{i}.json"
        f.write_text(text)
        files.append(str(f))
    assert len(files) == 2
    out = tmp_path / "imported.db"
    p = cli("import", "iperf3", *files, "--db", str(out))
    assert p.returncode == 0, p.stderr
    with Store(str(out), readonly=True) as st:
        (test,) = list(load_accept_tests(st))
    got = test.runs[0]
    for field in ("received_packets", "lost_packets", "sent_packets", "received_bytes",
                  "received_s", "datagram_bytes", "tool_version"):  # fmt: skip
        assert getattr(got, field) == getattr(live, field), field
    assert got.intervals == live.intervals and got.intervals_side == "receiver"
    assert got.payload_bps() == pytest.approx(live.payload_bps(), rel=1e-12)


def test_a_busy_receiver_that_cannot_start_is_refused_not_measured(tb_name, tmp_path, monkeypatch):
    """A busy-receiver scenario whose stress-ng ends at once (here: not installed, the
    PATH holding only ip and taskset) is refused in one line naming it, rather than run
    as a test of a busy receiver whose CPU is in fact free."""
    import shutil
    import subprocess

    from netassay.errors import ToolError
    from netassay.methods.accept.run import _busy

    for tool in ("ip", "taskset"):
        (tmp_path / tool).symlink_to(shutil.which(tool))
    ns = f"na-{tb_name}-srv"
    subprocess.run(["ip", "netns", "add", ns], check=True)  # removed by tb_name's cleanup
    scenario = Scenario(name="busy receiver", busy_receiver=1, server_cpu=0)
    with monkeypatch.context() as env:
        env.setenv("PATH", str(tmp_path))
        with pytest.raises(ToolError) as err, _busy({"namespaces": {"srv": ns}}, scenario):
            pytest.fail("the scenario ran without its busy receiver")
    line = err.value.line()
    assert "the busy receiver (stress-ng on CPU 0) ended at once (exit " in line, line
    assert "stress-ng" in line and "\n" not in line
    with _busy({"namespaces": {"srv": ns}}, scenario):  # with stress-ng found, it runs
        out = subprocess.run(["pgrep", "-f", "stress-ng --cpu 1"], capture_output=True)
        assert out.returncode == 0
