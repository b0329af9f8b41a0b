"""The doctor's pure parts on plain data: each check's judgment of its figures, the
trusted range, the verdict, the host's readings parsed from sample /proc and /sys text,
and the text and JSON views."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netassay.counters import hostcheck
from netassay.errors import UsageError
from netassay.methods.doctor import checks as doctor_checks
from netassay.methods.doctor import store as doctor_store
from netassay.methods.doctor import view as doctor_view
from netassay.methods.doctor.request import DoctorRequest, refuse_own_knobs
from netassay.store.db import Experiment


def _trial(sent, lost, excluded=None, where=None, duration_s=1.0):
    return doctor_checks.TrialFigures(sent=sent, lost=lost, forwarded=sent - lost,
                                      duration_s=duration_s, excluded=excluded,
                                      loss_location=where or {})  # fmt: skip


def _probe(cpu, lateness_max_ns, rate_error=0.0):
    return doctor_checks.Probe(rate_error, lateness_max_ns, cpu)


def _send(lateness_max_ns, rate_error=0.0):
    return doctor_checks.Send(rate_error, lateness_max_ns)


# -- the host's readings -------------------------------------------------------------------
def test_cpu_lists_are_read_as_the_kernel_writes_them():
    assert hostcheck.parse_cpu_list("") == []
    assert hostcheck.parse_cpu_list("0-2,5\n") == [0, 1, 2, 5]
    assert hostcheck.parse_cpu_list("3") == [3]


def test_smt_governor_clocksource_slack_and_sysctls_parse():
    assert hostcheck.parse_smt("on\n", "1") == "on"
    assert hostcheck.parse_smt("on", "0") == "on, no sibling active"
    assert hostcheck.parse_smt("notsupported\n", "0") == "notsupported"
    assert hostcheck.parse_smt("", "") == "unknown"
    assert hostcheck.parse_governors({"cpu0": "performance\n", "cpu1": ""}) == {
        "cpu0": "performance"
    }
    assert hostcheck.parse_clocksource("tsc\n", "tsc kvm-clock \n") == {
        "current": "tsc", "available": ["tsc", "kvm-clock"]
    }  # fmt: skip
    assert hostcheck.parse_timer_slack("50000\n") == 50000
    assert hostcheck.parse_timer_slack("") is None
    assert hostcheck.parse_sysctls({"a": "300\n", "b": "4096\t87380", "c": ""}) == {
        "a": 300, "b": "4096 87380"
    }  # fmt: skip


def test_gro_is_read_from_ethtool_json():
    text = '[{"ifname": "sut0", "generic-receive-offload": {"active": true, "fixed": false}}]'
    assert hostcheck.parse_gro(text) == "on"
    assert hostcheck.parse_gro(text.replace("true", "false")) == "off"
    assert hostcheck.parse_gro("not json") is None
    assert hostcheck.parse_gro('[{"ifname": "x"}]') is None


# -- each check's judgment -----------------------------------------------------------------
def test_host_settings_are_judged_with_their_fix():
    assert (
        doctor_checks.governor({"cpu0": "performance", "cpu1": "performance"}).status
        == doctor_checks.PASS
    )
    g = doctor_checks.governor({"cpu0": "powersave"})
    assert g.status == doctor_checks.WARN and "performance" in g.fix
    assert doctor_checks.governor({}).status == doctor_checks.PASS  # a VM without cpufreq
    assert (
        doctor_checks.smt("on").status == doctor_checks.WARN
        and doctor_checks.smt("notsupported").status == doctor_checks.PASS
    )
    assert doctor_checks.isolcpus([0, 1], [0, 1]).status == doctor_checks.PASS
    iso = doctor_checks.isolcpus([], [0, 1])
    assert iso.status == doctor_checks.WARN and "isolcpus=0,1" in iso.fix
    assert (
        doctor_checks.irqbalance(True).status == doctor_checks.WARN
        and doctor_checks.irqbalance(False).status == doctor_checks.PASS
    )
    assert (
        doctor_checks.clocksource({"current": "tsc", "available": ["tsc"]}).status
        == doctor_checks.PASS
    )
    assert (
        doctor_checks.clocksource({"current": "hpet", "available": ["tsc", "hpet"]}).status
        == doctor_checks.WARN
    )
    assert (
        doctor_checks.timer_slack(50_000).status == doctor_checks.PASS
        and doctor_checks.timer_slack(1_000_000).status == doctor_checks.WARN
    )
    low = doctor_checks.napi({"net.core.netdev_budget": 100, "net.core.dev_weight": 64}, {})
    assert low.status == doctor_checks.WARN and "netdev_budget" in low.fix
    ok = doctor_checks.napi({"net.core.netdev_budget": 300, "net.core.dev_weight": 64},
                {"sut0": {"gro": "off", "threaded": 0}})  # fmt: skip
    assert ok.status == doctor_checks.PASS and "sut0 off" in ok.figure


def test_steal_passes_warns_and_fails_by_share():
    assert doctor_checks.steal({"cpu0": 0.002, "cpu1": 0.0}).status == doctor_checks.PASS
    w = doctor_checks.steal({"cpu0": 0.002, "cpu1": 0.03})
    assert w.status == doctor_checks.WARN and "cpu1" in w.figure and "3.0%" in w.figure
    assert doctor_checks.steal({"cpu0": 0.2}).status == doctor_checks.FAIL


def test_false_loss_fails_on_any_frame_lost_and_names_where():
    ok = doctor_checks.false_loss(200e3, [_trial(1_000_000, 0)] * 3, 3_000_000)
    assert ok.status == doctor_checks.PASS and ok.figure == "0 of 3,000,000 lost at 200 kpps"
    bad = doctor_checks.false_loss(200e3, [_trial(1_000_000, 0), _trial(1_000_000, 7, where={
        "sut_ingress": 7})], 2_000_000)  # fmt: skip
    assert (
        bad.status == doctor_checks.FAIL
        and "sut_ingress 7" in bad.figure
        and bad.value["lost"] == 7
    )
    # a trial left out (a measurement fault) does not count, but the check is not a pass
    left = doctor_checks.false_loss(
        200e3, [_trial(1_000_000, 0), _trial(1_000_000, 900, "stall")], 2e6
    )
    assert left.status == doctor_checks.WARN and left.value["lost"] == 0 and "1 of 2" in left.figure


def test_stalls_count_the_probes_a_cpu_was_taken_away_in():
    probes = [
        _probe(0, 50_000),
        _probe(0, 60_000),
        _probe(1, 4_000_000, rate_error=-1e-5),
        _probe(1, 100_000),
    ]
    s = doctor_checks.stalls(probes, 0.25)
    cpu1 = s.value["per_cpu"]["1"]
    assert s.status == doctor_checks.WARN and cpu1["stalled"] == 1 and cpu1["stalls_per_s"] == 2.0
    assert s.value["per_cpu"]["0"]["stalled"] == 0
    assert cpu1["lateness_max_ns"] == 4_000_000 and cpu1["rate_error_max"] == 1e-5
    assert cpu1["probes"] == 2 and cpu1["takers"] == []
    assert doctor_checks.stalls(probes[:2], 0.25).status == doctor_checks.PASS


def test_stalls_name_the_threads_that_took_each_cpu():
    probes = [_probe(1, 1_100_000)]
    kd = {"comm": "kdamond.0", "tid": 77, "kernel": True, "runs": 8, "run_ms": 17.4,
          "max_ms": 3.08, "over_100us": 8, "over_1ms": 7, "share": 0.0087}  # fmt: skip
    s = doctor_checks.stalls(probes, 0.25, {1: [kd]})
    assert "(held by kdamond.0 (7 runs of 1 ms or more, longest 3.08 ms))" in s.figure
    assert s.status == doctor_checks.WARN and "kdamond.0" in s.fix and "rcu_nocbs" in s.fix
    assert s.value["per_cpu"]["1"]["takers"] == [kd]
    # a user thread's long runs are named in the figure, not blamed on the kernel
    agent = {**kd, "comm": "agent", "kernel": False}
    s = doctor_checks.stalls(probes, 0.25, {1: [agent]})
    assert "held by agent (7 runs" in s.figure and "kernel threads" not in s.fix
    # a kernel thread whose runs are all short is named, not blamed
    short = {**kd, "max_ms": 0.2, "over_1ms": 0}
    assert "kernel threads" not in doctor_checks.stalls(probes, 0.25, {1: [short]}).fix


def test_the_stall_rule_bounds_the_trusted_rate_by_the_queue():
    # 20 runs; the worst tenth (2 runs at 20 ms) is spared, the 18th largest (5 ms) bounds
    sends = [_send(5_000_000)] * 18 + [_send(20_000_000)] * 2
    p = doctor_checks.pacing(sends, 1000)
    assert p.status == doctor_checks.PASS
    assert p.value["stall_bound_pps"] == pytest.approx(200_000)  # 1000 packets / 5 ms
    assert p.value["lateness_max_ns"] == 20_000_000
    # the SUT's CPU taken away for 10 ms in 9 of 10 probes fills the backlog as much
    sut = doctor_checks.pacing(sends, 1000, [10_000_000] * 9 + [50_000_000])
    assert sut.value["stall_bound_pps"] == pytest.approx(100_000)
    assert doctor_checks.pacing([_send(0, rate_error=-0.005)], 1000).status == doctor_checks.WARN
    assert (
        doctor_checks.stall_bound(0, 1000) is None and doctor_checks.stall_bound(1e6, None) is None
    )


def test_reach_and_mrr():
    assert doctor_checks.reach(700e3, 700e3, 450e3).status == doctor_checks.PASS
    r = doctor_checks.reach(400e3, 220e3, 450e3)
    assert r.status == doctor_checks.WARN and "MRR" in r.figure
    m = doctor_checks.mrr([{"forwarded_pps": 420e3, "saturated": True},
               {"forwarded_pps": 460e3, "saturated": True},
               {"forwarded_pps": 440e3, "saturated": True}])  # fmt: skip
    assert m.status == doctor_checks.PASS and m.value["mrr_pps"] == 440e3
    assert (
        doctor_checks.mrr([{"forwarded_pps": 1e6, "saturated": False}]).status == doctor_checks.WARN
    )
    assert doctor_checks.mrr([]).status == doctor_checks.FAIL


def test_the_cap_is_judged_against_cap_times_duration_plus_its_bucket():
    # 100 kpps for 0.5 s through a 2000-packet bucket: 52,000 frames is the truth
    assert (
        doctor_checks.cap_truth(100e3, 2000, _trial(75_000, 23_000, duration_s=0.5)).status
        == doctor_checks.PASS
    )
    c = doctor_checks.cap_truth(100e3, 2000, _trial(75_000, 75_000 - 56_000, duration_s=0.5))
    assert c.status == doctor_checks.WARN and c.value["error"] == pytest.approx(4000 / 52000)
    assert (
        doctor_checks.cap_truth(100e3, 2000, _trial(75_000, 0, duration_s=0.5)).status
        == doctor_checks.FAIL
    )
    assert (
        doctor_checks.cap_truth(100e3, 2000, _trial(75_000, 23_000, "stall", 0.5)).status
        == doctor_checks.WARN
    )


def test_the_drop_is_judged_at_the_drop_rule_within_its_binomial_interval():
    n, p = 400_000, 0.01  # 4000 expected, sd ~63
    at = lambda k, other=0: _trial(n, k + other, where={"sut_forward": k})  # noqa: E731
    assert doctor_checks.drop_truth(p, at(4100)).status == doctor_checks.PASS
    assert doctor_checks.drop_truth(p, at(4300)).status == doctor_checks.WARN  # z ~ 4.8
    assert doctor_checks.drop_truth(p, at(5000)).status == doctor_checks.FAIL
    beside = doctor_checks.drop_truth(p, at(4000, other=12))
    assert beside.status == doctor_checks.WARN and "12 lost elsewhere" in beside.figure


def test_trusted_range_is_the_lower_of_the_stall_bound_and_the_reach():
    t = doctor_checks.trusted(800e3, 700e3, 450e3, 200e3)
    assert t.status == doctor_checks.PASS and t.value["trusted_pps"] == 700e3
    assert t.value["sweep_to_pps"] == pytest.approx(1.25 * 450e3)
    w = doctor_checks.trusted(300e3, 700e3, 450e3, 200e3)
    assert (
        w.status == doctor_checks.WARN and w.value["trusted_pps"] == 300e3 and "--backlog" in w.fix
    )
    r = doctor_checks.trusted(800e3, 300e3, 450e3, 200e3)  # the generator's reach limits it
    assert r.status == doctor_checks.WARN and "generator paces no higher" in r.fix
    assert doctor_checks.trusted(150e3, 700e3, 450e3, 200e3).status == doctor_checks.FAIL
    assert doctor_checks.trusted(None, 700e3, None, 200e3).value["trusted_pps"] == 700e3


def test_the_verdict_is_the_worst_check():
    p, w, f = (
        doctor_checks.Check("x", s, "")
        for s in (doctor_checks.PASS, doctor_checks.WARN, doctor_checks.FAIL)
    )
    assert doctor_checks.verdict([p, p]) == doctor_checks.PASS
    assert doctor_checks.verdict([p, w, p]) == doctor_checks.WARN
    assert doctor_checks.verdict([w, f, p]) == doctor_checks.FAIL
    assert doctor_checks.verdict([]) == doctor_checks.PASS


# -- the request ---------------------------------------------------------------------------
def test_quick_takes_fewer_frames_and_own_knobs_are_refused():
    assert DoctorRequest().frames_per_trial == 1_000_000
    assert DoctorRequest(quick=True).frames_per_trial == 100_000
    assert DoctorRequest(quick=True, frames=5000).frames_per_trial == 5000
    with pytest.raises(UsageError, match="10 minutes"):
        DoctorRequest(frames=100_000_000, low_load_pps=1000).validate()
    with pytest.raises(UsageError, match="--sut-cap"):
        refuse_own_knobs({"sut_cap_pps": 1e5, "backlog": 10}, {"sut_cap_pps": "--sut-cap"})
    refuse_own_knobs({"backlog": 10}, {})


# -- the views -----------------------------------------------------------------------------
def _stored(checks):
    exp = Experiment(7, "k", doctor_store.KIND, "netassay-testbed", "doctor here",
                     "2026-01-01T00:00:00", "0", {}, {}, {})  # fmt: skip
    return doctor_store.StoredDoctor(Path("d.db"), exp, checks, doctor_store.summary(checks))


def test_the_text_view_has_one_line_per_check_then_the_verdict():
    checks = [
        doctor_checks.Check("smt", doctor_checks.PASS, "notsupported"),
        doctor_checks.isolcpus([], [0, 1]),
        doctor_checks.trusted(300e3, 700e3, 450e3, 200e3),
    ]
    out = doctor_view.text(_stored(checks)).splitlines()
    assert out[2].startswith("PASS  smt ") and out[2].endswith("notsupported")
    assert out[3].startswith("WARN  isolcpus") and out[3].endswith("(other tasks stay off them))")
    assert out[-1].startswith("verdict: WARN (1 pass, 2 warn, 0 fail); a sweep can trust loads "
                              "up to 300 kpps")  # fmt: skip


def test_an_unfinished_run_says_so_and_json_is_one_object():
    r = _stored([doctor_checks.Check("smt", doctor_checks.PASS, "on")])
    assert "unfinished" in doctor_view.verdict_line(r)
    obj = json.loads(doctor_view.as_json(r))
    assert obj["verdict"] == "PASS" and obj["finished"] is False and obj["trusted_pps"] is None
    assert sorted(obj) == ["checks", "counts", "db", "experiment_id", "finished", "kind", "label",
                           "mrr_pps", "sweep_to_pps", "trusted_pps", "utc", "verdict"]  # fmt: skip
    assert obj["counts"] == {"PASS": 1, "WARN": 0, "FAIL": 0}
    assert obj["checks"] == [{"name": "smt", "status": "PASS", "figure": "on", "fix": "",
                              "value": {}}]  # fmt: skip


# -- the reference later experiments carry ---------------------------------------------------
def test_a_doctor_result_is_kept_for_this_boot_and_these_settings(tmp_path, monkeypatch):
    from dataclasses import replace

    from netassay.config import TestbedConfig
    from netassay.shared import doctor_reference

    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    cfg = TestbedConfig().resolved(2)
    assert doctor_reference.newest(cfg) is None  # none yet
    ref = {"utc": "2026-11-25T21:00:00+00:00", "verdict": "WARN", "experiment_id": 3}
    doctor_reference.remember(ref, cfg)
    assert doctor_reference.newest(cfg) == ref
    from netassay.testbed import state

    assert state.known_testbeds() == []  # never taken for a testbed (its sysctls restored)
    # a SUT, its ground truths and its sink are the doctor's own: the same settings
    assert (
        doctor_reference.newest(replace(cfg, sut="xdp-router", sut_cap_pps=1e5, sut_drop=0.1))
        == ref
    )
    assert (
        doctor_reference.newest(replace(cfg, backlog=100)) is None
    )  # another backlog: not checked
    assert doctor_reference.newest(object()) is None  # a testbed kind it does not check
    kept = (
        tmp_path / "run" / doctor_reference.RECORD
    )  # taken before a reboot: not this host as it is
    kept.write_text(json.dumps({**json.loads(kept.read_text()), "boot_id": "another boot"}))
    assert doctor_reference.newest(cfg) is None
    assert doctor_reference.line(ref) == "host checked by doctor on 2026-11-25T21:00:00+00:00: WARN"
    assert doctor_reference.line(None) == ""
