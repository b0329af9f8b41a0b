"""What the trial engine says of a testbed changed under a trial and of a generator that
stalled or ended without a report (pure: snapshots and generator results as the
counters and netassay-gen give them; ``tests/system/test_faults.py`` injects each).
"""

from __future__ import annotations

import pytest

from netassay.quality import exclusion
from netassay.testbed import dataplane
from netassay.traffic import generator
from netassay.traffic.generator import GeneratorLost, GenResult
from netassay.trial import engine, integrity

NS = {"tg": "na-x-tg", "sut": "na-x-sut", "sink": "na-x-sink"}


def _link(up=True, changes=2, prog=None, admin=None):
    return {
        "admin_up": up if admin is None else admin,
        "up": up,
        "carrier_changes": changes,
        "xdp_prog": prog,
    }


def _snap(**links):
    """A snapshot with the given links' state: role__dev=state."""
    ns: dict = {}
    for key, state in links.items():
        role, dev = key.split("__")
        ns.setdefault(role, {}).setdefault("link_state", {"lo": _link()})[dev] = state
    return {"ns": ns}


def _bed(**over):
    links = dict(tg__tg0=_link(), sut__sut0=_link(), sut__sut1=_link(), sink__sink0=_link(prog=7))
    links.update(over)
    return _snap(**links)


def test_an_unchanged_testbed_has_no_fault():
    assert integrity.link_faults(_bed(), _bed(), NS) == []
    assert integrity.sink_faults(_bed(), _bed(), ("sink", "sink0"), "xdp", 0, NS) == []


def test_a_link_down_during_a_trial_is_a_testbed_fault_not_sut_loss():
    after = _bed(sut__sut1=_link(up=False, changes=3), sink__sink0=_link(False, 3, 7, True))
    w = integrity.link_faults(_bed(), after, NS)
    assert "link sut1 in na-x-sut went down during the trial (and is still down)" in w[1]
    assert "link sink0 in na-x-sink lost its carrier (its peer went down)" in w[0]
    assert all("not to the SUT" in x for x in w)
    assert exclusion(w).startswith("testbed fault")


def test_a_link_down_and_up_again_is_seen_by_its_carrier_changes():
    after = _bed(sut__sut1=_link(changes=4))
    w = integrity.link_faults(_bed(), after, NS)
    assert len(w) == 1 and "went down and up again during the trial (2 carrier change(s))" in w[0]
    # carrier changes unknown (the programs' read): only a link still down shows
    unknown = _bed(sut__sut1=_link(changes=None))
    assert integrity.link_faults(unknown, _bed(sut__sut1=_link(changes=None)), NS) == []


def test_a_deleted_link_is_a_testbed_fault():
    after = _bed()
    del after["ns"]["sut"]["link_state"]["sut1"]
    w = integrity.link_faults(_bed(), after, NS)
    assert len(w) == 1 and "link sut1 in na-x-sut was deleted during the trial" in w[0]


def test_the_sinks_program_detached_or_passing_frames_is_a_sink_fault():
    sink = ("sink", "sink0")
    gone = integrity.sink_faults(_bed(), _bed(sink__sink0=_link()), sink, "xdp", 500, NS)
    assert "the sink's XDP program was detached from sink0 in na-x-sink" in gone[0]
    assert "500 test frame(s) went past the sink's XDP program uncounted" in gone[1]
    assert exclusion(gone).startswith("sink fault")
    other = integrity.sink_faults(_bed(), _bed(sink__sink0=_link(prog=9)), sink, "xdp", 0, NS)
    assert len(other) == 1 and "replaced on sink0" in other[0]
    # the cross-check sink passes its frames to the nft counter on purpose
    assert integrity.sink_faults(_bed(), _bed(), sink, "xdp+nft", 500, NS) == []
    assert integrity.sink_faults(_bed(), _bed(sink__sink0=_link()), sink, "nft", 500, NS) == []
    assert integrity.sink_attached(_bed(), sink) and not integrity.sink_attached(
        _bed(sink__sink0=_link()), sink
    )


def test_the_watch_says_why_no_trial_can_run(tmp_path, monkeypatch):
    monkeypatch.setattr(integrity, "NETNS_DIR", tmp_path)
    for ns in NS.values():
        (tmp_path / ns).touch()
    w = integrity.Watch()
    assert w.problem(_bed(), NS) is None
    w.settle(_bed())
    down = _bed(tg__tg0=_link(up=False, changes=3), sut__sut0=_link(False, 3, None, True))
    assert w.problem(down, NS) == "link tg0 in na-x-tg is down (set down by another process)"
    dark = _bed(sut__sut0=_link(False, 3, None, True))
    assert w.problem(dark, NS) == "link sut0 in na-x-sut has no carrier (its peer is down)"
    gone = _bed()
    del gone["ns"]["sink"]["link_state"]["sink0"]
    assert w.problem(gone, NS) == "link sink0 in na-x-sink was deleted (by another process)"
    (tmp_path / "na-x-sut").unlink()
    assert w.problem(_bed(), NS) == "namespace(s) na-x-sut were deleted (by another process)"


def test_a_data_planes_own_links_are_left_to_it_and_its_veths_still_watched(tmp_path, monkeypatch):
    """Under a data plane (Open vSwitch's bridge port br0 is down: it keeps it so) only
    the SUT's two veths are the testbed's; one of them down is still said."""
    monkeypatch.setattr(integrity, "NETNS_DIR", tmp_path)
    for ns in NS.values():
        (tmp_path / ns).touch()
    own = dataplane.own_links({"config": {"sut": "ovs"}})
    assert own == {"sut": ("sut0", "sut1")}
    assert dataplane.own_links({"config": {"sut": "router"}}) is None
    bed = _bed(sut__br0=_link(up=False, changes=1))
    assert (
        integrity.Watch().problem(bed, NS)
        == "link br0 in na-x-sut is down (set down by another process)"
    )
    w = integrity.Watch(only=own)
    assert w.problem(bed, NS) is None
    w.settle(bed)
    assert integrity.link_faults(bed, bed, NS, own) == []
    down = _bed(sut__br0=_link(up=False, changes=1), sut__sut1=_link(up=False, changes=3))
    assert w.problem(down, NS) == "link sut1 in na-x-sut is down (set down by another process)"
    assert len(integrity.link_faults(bed, down, NS, own)) == 1


def test_the_watch_sees_a_flap_between_trials_once():
    w = integrity.Watch()
    assert w.flapped(_bed()) == []  # nothing known yet
    w.settle(_bed())
    flap = _bed(sut__sut1=_link(changes=4), sink__sink0=_link(changes=4, prog=7))
    assert w.flapped(flap) == [("sink", "sink0"), ("sut", "sut1")]
    w.settle(flap)
    assert w.flapped(flap) == []


def _gen(**kw):
    base = dict(
        technique="af_packet_sendmmsg", planned=60_000, sent=60_000, first_tx_ns=10**9,
        last_tx_ns=4 * 10**9, duration_s=3.0, rate_pps=2e4, achieved_rate_pps=2e4,
        rate_error=0.0, lateness_max_ns=50_000, lateness_p99_ns=10_000, retries=0,
        stopped_by_signal=False, ok=True,
    )  # fmt: skip
    raw = kw.pop("raw", {})
    base.update(kw)
    return GenResult(**base, raw={**base, "stop_reason": "complete", **raw})


def test_a_stall_of_two_seconds_caught_up_is_said_with_its_rate_and_judged_by_its_loss():
    # stopped 0.5 s in for 2 s: the frames due went as fast as it could, on time
    res = _gen(
        lateness_max_ns=2_000_000_000,
        raw={"stall_max_ns": 2_000_000_000, "stall_start_ns": 15 * 10**8, "end_ns": 4 * 10**9},
    )  # fmt: skip
    assert engine.real_span(res) is res  # it ended on time: its duration and rate as reported
    w = engine._generator_warnings(res, 2e4, 1000)
    assert w == [
        "generator stall: the generator sent nothing for 2.000 s from 0.500 s into the trial "
        "while frames were due: it was stopped, or had no CPU; then it sent the ~40,000 "
        "frames due as fast as it could: 60,000 frames in 3.00 s (20 kpps of the 20 kpps "
        "offered), not offered evenly as planned; its catch-up burst of ~40,000 frames "
        "could overflow the smallest queue on the path (1,000 packets)"
    ]
    # the stall rule: nothing lost, the SUT carried the load (a note, the trial used);
    # lost at the queue the burst overflows, a fault (never SUT loss)
    flat = ({"k": 0}, {"k": 60_000}, {"k": 60_000})
    kept = engine._trial_warnings(_ctx(), (res,), 2e4, flat, "k", [], 60_000, {}, True)
    assert len(kept) == 1 and kept[0].startswith("stall without harm (nothing lost)")
    assert exclusion(kept) is None
    lost = {"sut_ingress": 500, "unaccounted": 0}
    out = engine._trial_warnings(_ctx(), (res,), 2e4, flat, "k", [], 59_500, lost, True)
    assert exclusion(out).startswith("generator stall: the generator sent nothing")
    # a burst that fits every queue: a note
    note = engine._generator_warnings(res, 2e4, 100_000)
    assert note[0].endswith("its catch-up fits every queue on the path") and not exclusion(note)
    # it could not catch up before the trial's end: said, never as the generator's reach
    slow = _gen(
        sent=51_000, achieved_rate_pps=17_000.0, lateness_max_ns=2_000_000_000,
        raw={"stall_max_ns": 2_000_000_000, "stall_start_ns": 15 * 10**8, "end_ns": 4 * 10**9},
    )  # fmt: skip
    w = engine._generator_warnings(slow, 2e4, 1000)
    assert w[0].startswith("generator stall:") and "(17 kpps of the 20 kpps offered)" in w[0]
    assert w[1].startswith("truncated trial: the generator sent 9000 packet(s) fewer")
    assert not any(x.startswith("generator limit") for x in w)


def test_a_stall_the_trials_end_came_in_is_said_with_its_real_duration_and_rate():
    # 3 s at 20 kpps, stopped 1.5 s in for 2 s: its deadline (3.003 s) came meanwhile
    end = 10**9 + 35 * 10**8
    res = _gen(
        sent=30_000, last_tx_ns=10**9 + 15 * 10**8, duration_s=1.5, achieved_rate_pps=2e4,
        raw={"stall_max_ns": 2 * 10**9, "stall_start_ns": 10**9 + 15 * 10**8, "end_ns": end,
             "stop_reason": "deadline"},
    )  # fmt: skip
    real = engine.real_span(res)
    assert real.duration_s == pytest.approx(3.5)
    assert real.achieved_rate_pps == pytest.approx(30_000 / 3.5)
    w = engine._generator_warnings(real, 2e4, 1000)
    assert w[0] == (
        "generator stall: the generator sent nothing for 2.000 s from 1.500 s into the trial "
        "while frames were due: it was stopped, or had no CPU; its run ended during it"
    )
    assert w[1] == (
        "truncated trial: 30,000 of the 60,000 planned frames sent, in 3.50 s (8.571 kpps "
        "of the 20 kpps offered): the stall left the rest unsent; not SUT loss"
    )
    assert len(w) == 2  # no 'generator limit': the generator's reach is not in question


def test_a_short_stall_keeps_its_rule_and_says_how_long_nothing_was_sent():
    res = _gen(
        lateness_max_ns=30_000_000, raw={"stall_max_ns": 30_000_000, "stall_start_ns": 2 * 10**9}
    )
    w = engine._generator_warnings(res, 2e4, 400)  # a 600-frame burst, a 400-packet queue
    assert w[0].startswith("generator stall: a send was 30.0 ms late")
    assert w[0].endswith("sent nothing for 0.030 s from 1.000 s into the trial while frames "
                         "were due: it was stopped, or had no CPU")  # fmt: skip
    # an older generator says nothing of its stalls: its words as before
    old = engine._generator_warnings(_gen(lateness_max_ns=30_000_000), 2e4, 400)
    assert old[0].endswith("(400 packets)")


def _ctx():
    class Ctx:
        sink = type("S", (), {"kind": "xdp"})()
        reverse = None
        queue_pkts = 1000
        path = None
        counters = None

        def __init__(self) -> None:
            self.queues = {"sut_ingress": 1000}

    return Ctx()


def test_a_generator_killed_by_a_signal_is_lost_not_failed():
    with pytest.raises(GeneratorLost) as e:
        generator.parse_output("", "", -9)
    assert e.value.how == "killed by SIGKILL" and e.value.exit_code == 7
    assert e.value.line().startswith("netassay-gen was killed by SIGKILL")


def test_a_lost_generators_stand_in_counts_what_its_port_sent():
    before = {"ns": {"tg": {"links": {"tg0": {"tx_packets": 100, "tx_dropped": 0}},
                            "qdisc_drops": {"tg0": 0}}}}  # fmt: skip
    mid = {"ns": {"tg": {"links": {"tg0": {"tx_packets": 16_100, "tx_dropped": 3}},
                         "qdisc_drops": {"tg0": 2}}}}  # fmt: skip
    res = engine.stand_in(2e4, 2.0, before, mid, 10**9, 18 * 10**8)
    assert (res.planned, res.sent) == (40_000, 16_005)
    assert res.duration_s == pytest.approx(0.8)
    assert res.achieved_rate_pps == pytest.approx(16_005 / 0.8)
    assert not res.stopped_by_signal and res.raw["stop_reason"] == "lost"
