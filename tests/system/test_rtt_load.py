"""Background load on the RTT testbed: it runs where it is asked to, it is stored with each
run, and its location decides which side of the round trip grows (root)."""

from __future__ import annotations

import json
import statistics

import pytest

pytestmark = pytest.mark.system


def _runs(cli, name, *args):
    res = cli("rtt", "--name", name, "--json", "--path", "bridge", "--probe", "udp",
              "--count", "300", "--runs", "2", *args, timeout=240)  # fmt: skip
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def _p50(runs, segment):
    return statistics.median(r["segments"][segment]["p50_ns"] for r in runs)


@pytest.mark.slow
def test_cpu_load_location_decides_which_side_grows(cli, tb_name, netns_of):
    """CPU load on the sender server (8 busy processes on its CPU, where the sender's
    application runs) makes the sender's side grow (the application's share: seed 002's
    RTT overhead is that plus the kernel's overhead) far more than the response time;
    CPU load on the responder makes the response time grow far more than the sender's
    kernel overhead. The machine's other work moves to the CPU that is not loaded, so
    each side may grow somewhat under the other's load; the loaded side must grow at
    least 5 times, and more than the other side."""
    # The hypervisor may move a vCPU's load for a while, and the scheduler may let the
    # woken echo run ahead of the busy processes for a whole comparison (seen once in a
    # CI rehearsal: the response 0.8x under responder load, twice in a row): the
    # comparison is measured again (fresh runs, nothing reused) up to twice.
    attempts = 3
    for attempt in range(attempts):
        base = _runs(cli, tb_name)
        app0, ovh0, resp0 = _p50(base, "app"), _p50(base, "overhead"), _p50(base, "response")
        snd = _runs(cli, tb_name, "--load", "cpu:8@sender")
        rsp = _runs(cli, tb_name, "--load", "cpu:8@responder")
        app_s, resp_s = _p50(snd, "app") / app0, _p50(snd, "response") / resp0
        ovh_r, resp_r = _p50(rsp, "overhead") / ovh0, _p50(rsp, "response") / resp0
        ok = app_s >= 5 and app_s > resp_s and resp_r >= 5 and resp_r > ovh_r
        if ok or attempt == attempts - 1:
            break
    assert app_s >= 5 and app_s > resp_s, (app_s, resp_s)
    assert resp_r >= 5 and resp_r > ovh_r, (ovh_r, resp_r)
    for runs, where in ((snd, "sender"), (rsp, "responder")):
        for r in runs:
            load = r["load"]
            assert load["load"] == f"cpu:8@{where}" and load["running"] == load["processes"] == 1
    assert netns_of(tb_name) == []


def test_net_load_crosses_the_wire_and_is_stored(cli, tb_name, netns_of, tmp_path):
    db = tmp_path / "net.db"
    res = cli("rtt", "--name", tb_name, "--json", "--path", "macvlan", "--count", "300",
              "--runs", "2", "--load", "net:4@responder", "--load-rate", "5k", "--db", str(db),
              timeout=240)  # fmt: skip
    assert res.returncode == 0, res.stderr
    for line in res.stdout.splitlines():
        r = json.loads(line)
        load = r["load"]
        assert load["type"] == "net" and load["count"] == 4 and load["running"] == 4
        # 4 background endpoints of the sender's server send 5 kpps each to the responder's
        assert load["wire"]["snd_to_rsp_pps"] > 0.8 * 4 * 5000, load
        assert r["lost"] == 0 and r["segments"]["rtt"]["negative"] == 0
    from netassay.methods.rtt import store
    from netassay.store.db import Store

    with Store(db, readonly=True) as st:
        (exp,) = list(store.rtt_experiments(st))
        assert exp.config["load"] == "net:4@responder" and exp.config["testbed"]["background"] == 4
        assert all(run.summary["load"]["type"] == "net" for run in store.runs(st, exp.id))
    assert netns_of(tb_name) == []
