"""Per-probe segments from capture times, CPU shares, and the parsing of rtt's inputs."""

from __future__ import annotations

import numpy as np
import pytest

from netassay.counters import cpu
from netassay.counters.capture import POINT_NAMES
from netassay.errors import UsageError
from netassay.methods.rtt.segments import compute, lost_after
from netassay.traffic.load import Load
from netassay.traffic.probe import ProbeSpec


def _probe(times: list[int]) -> tuple[np.ndarray, ...]:
    """sched, tx, P1..P8, rx of probes given as rows."""
    a = np.array(times, dtype=np.uint64)
    return a[:, 0], a[:, 1], a[:, -1], {n: a[:, 2 + i] for i, n in enumerate(POINT_NAMES)}


def test_segments_by_hand():
    # sched tx  P1  P2  P3  P4  P5  P6  P7  P8  rx
    sched, tx, rx, pts = _probe([[100, 110, 113, 115, 120, 124, 130, 133, 139, 142, 150]])
    seg, counts = compute(sched, tx, rx, pts)
    assert counts == {"answered": 1, "captured": 1, "out_of_order": 0}
    got = {k: int(v[0]) for k, v in seg.items()}
    assert got["rtt"] == 142 - 113
    assert got["overhead"] == (115 - 113) + (142 - 139)
    assert got["wire"] == (120 - 115) + (139 - 133)
    assert got["response"] == 133 - 120
    assert (got["response_in"], got["turnaround"], got["response_out"]) == (4, 6, 3)
    assert got["latency"] == 50 and got["latency_sent"] == 40 and got["send_delay"] == 10
    assert got["app"] == (113 - 110) + (150 - 142)
    assert got["latency_sent"] == got["app"] + got["rtt"]
    assert got["latency_kernel"] == 142 - 110  # the send call to the reply at the NIC
    assert got["overhead"] + got["wire"] + got["response"] == got["rtt"]


def test_lost_unsent_and_uncaptured_probes():
    rows = [
        [100, 110, 113, 115, 120, 124, 130, 133, 139, 142, 150],  # fine
        [200, 210, 213, 215, 0, 0, 0, 0, 0, 0, 0],  # lost on the wire
        [300, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # never sent
        [400, 410, 413, 415, 420, 0, 430, 433, 439, 442, 450],  # a point missed it
    ]
    sched, tx, rx, pts = _probe(rows)
    seg, counts = compute(sched, tx, rx, pts)
    assert counts == {"answered": 2, "captured": 1, "out_of_order": 0}
    assert seg["latency"].tolist() == [50, 50] and seg["rtt"].tolist() == [29]
    assert seg["send_delay"].tolist() == [10, 10, 10]


def test_points_out_of_order_are_counted_not_hidden():
    sched, tx, rx, pts = _probe([[100, 110, 113, 112, 120, 124, 130, 133, 139, 142, 150]])
    seg, counts = compute(sched, tx, rx, pts)
    assert counts["out_of_order"] == 1 and seg["overhead_out"].tolist() == [-1]


def test_without_capture_only_the_application_side():
    sched, tx, rx, _ = _probe([[100, 110, 113, 115, 120, 124, 130, 133, 139, 142, 150]])
    seg, counts = compute(sched, tx, rx, None)
    assert set(seg) == {"latency", "latency_sent", "send_delay"} and counts["captured"] == 0


STAT = """cpu  10 0 10 80 0 0 0 0 0 0
cpu0 5 1 4 40 2 1 2 3 0 0
cpu1 5 0 6 40 0 0 0 0 0 0
intr 1 2 3
"""
STAT2 = """cpu0 15 1 14 48 2 3 12 3 0 0
cpu1 5 0 6 140 0 0 0 0 0 0
"""


def test_cpu_use_per_core():
    use = cpu.use(cpu.parse(STAT), cpu.parse(STAT2))
    assert use["cpu0"] == {
        "user": 0.25, "system": 0.25, "irq": 0.05, "softirq": 0.25, "steal": 0.0,
        "idle": 0.2, "busy": 0.8,
    }  # fmt: skip
    assert use["cpu1"]["idle"] == 1.0 and use["cpu1"]["busy"] == 0.0


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("cpu:32@sender", Load("cpu", 32, "sender")),
        ("net:8@responder", Load("net", 8, "responder")),
        ("none", Load()),
        (None, Load()),
        ("cpu:0@sender", Load()),
    ],
)
def test_load_parse(text, want):
    assert Load.parse(text) == want


@pytest.mark.parametrize("text", ["cpu:129@sender", "disk:1@sender", "cpu:8", "net:8@sink"])
def test_bad_load_is_one_usage_error(text):
    with pytest.raises(UsageError) as exc:
        Load.parse(text)
    assert exc.value.exit_code == 2 and "\n" not in exc.value.line()


@pytest.mark.parametrize(
    "spec",
    [
        ProbeSpec(probe="tcp", count=10),
        ProbeSpec(rate_pps=0.5, count=10),
        ProbeSpec(count=10, duration_s=1.0),
        ProbeSpec(),
        ProbeSpec(count=10, size_bytes=63),
        ProbeSpec(count=10, size_bytes=1515),
        ProbeSpec(rate_pps=1.0, duration_s=0.1),
    ],
)
def test_bad_probe_spec(spec):
    with pytest.raises(UsageError):
        spec.validate()


def test_planned_probes():
    assert ProbeSpec(rate_pps=1000, duration_s=2.5).planned() == 2500
    assert ProbeSpec(rate_pps=1000, count=7).planned() == 7


def test_lost_probes_are_located_at_the_last_point_that_saw_them():
    rows = [
        [100, 110, 113, 115, 120, 124, 130, 133, 139, 142, 150],  # answered
        [200, 210, 213, 215, 0, 0, 0, 0, 0, 0, 0],  # lost on the wire, out
        [300, 310, 313, 315, 320, 324, 330, 333, 339, 342, 0],  # lost in the sender's socket
        [400, 410, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # no point saw it
        [500, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # never sent: not lost
    ]
    _, tx, rx, pts = _probe(rows)
    assert lost_after(tx, rx, pts) == {"snd_up_out": 1, "snd_ep_in": 1, "sent": 1}
