"""A trial's note on other threads that held the SUT's CPU (``trial.noise``): said only
when a run of theirs, at the trial's load, reaches the SUT's ingress queue and frames
were lost there; a note, never a fault."""

from __future__ import annotations

import os

from netassay import quality
from netassay.counters.threads import Runs
from netassay.trial.noise import Noise, noise_warning

KD = {"comm": "kdamond.0", "tid": 77, "kernel": True, "runs": 3, "run_ms": 2.7,
      "max_ms": 0.9, "over_100us": 3, "over_1ms": 0, "share": 0.001}  # fmt: skip
SHORT = {**KD, "comm": "kworker/1:1", "run_ms": 0.3, "runs": 10, "max_ms": 0.03}


def test_a_run_that_fills_the_ingress_queue_at_this_load_is_said_with_the_loss():
    # 0.9 ms at 400 kpps leaves 360 frames to a 256-frame ring
    w = noise_warning({"sut": [KD, SHORT]}, 400e3, 256, 120, 1)
    assert w is not None and w.startswith(quality.HOST_NOISE)
    assert "CPU 1 (the SUT's) was held by kdamond.0 (longest run 0.9 ms); a run of 0.9 ms" in w
    assert "~360 frames to its 256-packet ingress queue: its 120 lost there" in w
    assert "kworker" not in w  # its runs leave 12 frames
    assert quality.exclusion([w]) is None  # a note: the trial is used


def test_a_user_thread_of_normal_priority_is_no_hold_a_real_time_one_is():
    user = {**KD, "comm": "agent", "kernel": False, "real_time": False}
    assert noise_warning({"sut": [user]}, 400e3, 256, 120, 1) is None
    w = noise_warning({"sut": [{**user, "real_time": True}]}, 400e3, 256, 120, 1)
    assert w is not None and "held by agent" in w


def test_no_note_without_loss_there_a_run_long_enough_or_a_pinned_sut():
    assert noise_warning({"sut": [KD]}, 400e3, 256, 0, 1) is None
    assert noise_warning({"sut": [KD]}, 200e3, 256, 50, 1) is None  # 180 frames fit
    assert noise_warning({"sut": [KD]}, 400e3, None, 50, 1) is None
    assert noise_warning({}, 400e3, 256, 50, None) is None
    assert noise_warning({"generator": [KD]}, 400e3, 256, 50, 1) is None


def _runs(tgid: int, comm: str) -> Runs:
    return Runs(1, tgid, tgid, comm, 1, 1000, 1000, (0, 0, 0))


def test_the_testbeds_own_threads_are_not_others():
    n = Noise(sut_cpu=1, gen_cpu=0, own_netns=set())
    assert n.own(_runs(1, "napi/sut0-8193"))
    assert n.own(_runs(2, "ksoftirqd/1"))
    assert n.own(_runs(3, "netassay-noise"))
    assert not n.own(_runs(77, "kdamond.0"))
    me = os.getpid()
    assert n.own(_runs(me, "python"))
    # a process in one of the testbed's namespaces is the testbed's (here: this one's)
    mine = os.stat(f"/proc/{me}/ns/net").st_ino
    parent = os.getppid()  # shares this namespace
    other = _runs(parent, "parent")
    assert Noise(1, 0, {mine}).own(other) and not Noise(1, 0, {mine + 1}).own(other)


def test_not_pinned_nothing_is_read():
    n = Noise.of({"namespaces": {}})
    n.start()
    assert n.tracer is None and n.stop() == {} and not n.error
