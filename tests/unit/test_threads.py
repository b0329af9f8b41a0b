"""Who held a CPU: the tracer's output parsed and its threads named (``counters.threads``),
on sample output written by hand; a thread's task flags read from sample /proc text."""

from __future__ import annotations

import json
import os

import pytest

from netassay.counters import threads

SAMPLE = {
    "window_ns": 2_000_000_000,
    "bounds_ns": [20_000, 100_000, 1_000_000],
    "rows": [
        {"cpu": 1, "tid": 77, "tgid": 77, "comm": "kdamond.0", "runs": 8,
         "total_ns": 17_442_809, "max_ns": 3_077_220, "over": [8, 8, 7]},
        {"cpu": 1, "tid": 15, "tgid": 15, "comm": "rcu_preempt", "runs": 300,
         "total_ns": 5_000_000, "max_ns": 310_000, "over": [20, 3, 0]},
        {"cpu": 1, "tid": 9, "tgid": 9, "comm": "tiny", "runs": 5, "total_ns": 50_000,
         "max_ns": 19_999, "over": [0, 0, 0]},
        {"cpu": 1, "tid": 50, "tgid": 50, "comm": "netassay-gen", "runs": 9,
         "total_ns": 1_900_000_000, "max_ns": 400_000_000, "over": [9, 9, 9]},
        {"cpu": 1, "tid": 61, "tgid": 60, "comm": "agent \"x\"", "runs": 2,
         "total_ns": 60_000, "max_ns": 40_000, "over": [2, 0, 0]},
        {"cpu": 0, "tid": 15, "tgid": 15, "comm": "rcu_preempt", "runs": 1,
         "total_ns": 3_300_000, "max_ns": 3_300_000, "over": [1, 1, 1]},
    ],
}  # fmt: skip


def test_the_tracers_output_is_read_whole():
    trace = threads.parse(json.dumps(SAMPLE))
    assert trace.window_s == 2.0 and trace.bounds_ns == (20_000, 100_000, 1_000_000)
    kd = trace.rows[0]
    assert (kd.cpu, kd.tid, kd.comm, kd.runs, kd.max_ns, kd.over) == (
        1, 77, "kdamond.0", 8, 3_077_220, (8, 8, 7))  # fmt: skip
    assert trace.rows[4].comm == 'agent "x"'


def test_takers_are_the_threads_with_the_longest_runs_on_that_cpu():
    trace = threads.parse(json.dumps(SAMPLE))
    rows = threads.takers(trace, 1, skip=lambda r: r.comm == "netassay-gen",
                     kernel=lambda tgid: tgid in (15, 77),
                     real_time=lambda tid: tid == 61)  # fmt: skip
    # longest run first; 'tiny' never ran 20 us at a time; the generator is the
    # measurement itself; CPU 0's rcu_preempt is CPU 0's
    assert [r["comm"] for r in rows] == ["kdamond.0", "rcu_preempt", 'agent "x"']
    kd = rows[0]
    assert kd["kernel"] and kd["over_1ms"] == 7 and kd["over_100us"] == 8
    assert abs(kd["max_ms"] - 3.07722) < 1e-9 and abs(kd["share"] - 0.0087214) < 1e-6
    assert not rows[2]["kernel"] and rows[2]["real_time"] and not kd["real_time"]
    text = threads.said(rows)
    assert text.startswith("kdamond.0 (7 runs of 1 ms or more, longest 3.08 ms), ")
    assert "rcu_preempt (longest run 0.31 ms)" in text
    assert [r["comm"] for r in threads.takers(trace, 0, kernel=lambda t: True)] == ["rcu_preempt"]
    assert threads.said([]) == "no other thread ran 20 us at a time"


def test_threads_of_one_name_are_one_taker():
    rows = [dict(SAMPLE["rows"][0], tid=t, tgid=t, max_ns=m, over=[1, 1, o])
            for t, m, o in ((101, 2_000_000, 1), (102, 4_000_000, 2))]  # fmt: skip
    trace = threads.parse(json.dumps({**SAMPLE, "rows": rows}))
    (one,) = threads.takers(trace, 1, kernel=lambda t: False)
    assert one["threads"] == 2 and one["over_1ms"] == 3 and one["max_ms"] == 4.0
    assert one["runs"] == 16
    assert threads.said([one]) == "kdamond.0 (2 threads, 3 runs of 1 ms or more, longest 4 ms)"


def test_a_kernel_threads_flags_are_read_past_a_name_with_parentheses():
    line = "77 (kdamond (0)) S 2 0 0 0 -1 2129984 0 0"
    assert threads.parse_stat_flags(line) == 2129984
    assert threads.parse_stat_flags(line) & threads.PF_KTHREAD
    assert threads.parse_stat_flags("77 (x) S") is None
    assert threads.is_kernel_thread(2)  # kthreadd
    assert not threads.is_kernel_thread(1)
    assert not threads.is_real_time(os.getpid())


def test_a_tracer_that_never_starts_is_one_line_not_a_hang(tmp_path, monkeypatch):
    """A tracer that says nothing (a real process that only sleeps) is ended after
    START_S and said in one line; nothing of it is left running."""
    import time

    from netassay.counters import threads
    from netassay.errors import ToolError

    mute = tmp_path / "mute"
    mute.write_text("#!/bin/sh\nexec sleep 60\n")
    mute.chmod(0o755)
    monkeypatch.setattr(threads, "artifact", lambda name, part: mute)
    monkeypatch.setattr(threads, "START_S", 0.5)
    tracer = threads.Tracer()
    t0 = time.monotonic()
    with pytest.raises(ToolError, match="netassay-noise did not start"):
        tracer.start()
    assert time.monotonic() - t0 < 5 and tracer.proc is None
