"""Per-probe segments from the capture points' times (pure: arrays in, arrays out).

A probe's times, on one clock (ns): ``sched`` (when it was due), ``tx`` (netassay-probe's
send call), P1..P8 (``capture.POINTS``: sender endpoint out, sender uplink out,
responder uplink in, responder endpoint in and out, responder uplink out, sender uplink
in, sender endpoint in) and ``rx`` (the reply read by netassay-probe).

The four segments of seed 002, each per probe, taken in the kernel:

- ``rtt`` = P8 - P1: the round trip as the sender endpoint's interface sees it;
- ``overhead`` = (P2 - P1) + (P8 - P7): sender endpoint <-> sender server's uplink;
- ``wire`` = (P3 - P2) + (P7 - P6): between the two servers' uplinks;
- ``response`` = P6 - P3: responder uplink -> responder endpoint -> uplink.

They sum to ``rtt`` exactly, by construction; what shows a capture that is wrong is a
point out of order (a negative part), counted in ``out_of_order``. The parts (``*_out``,
``*_back``, ``response_in``, ``turnaround``, ``response_out``) split them further.

From the application's side (every answered probe, captured or not):

- ``latency`` = rx - sched: the round trip from the time the probe was *due*, so a
  sender that fell behind cannot hide the probes it delayed (no coordinated omission);
- ``latency_sent`` = rx - tx: from the actual send call (what ping reports);
- ``send_delay`` = tx - sched: how late the send call was;
- ``app`` = (P1 - tx) + (rx - P8): the sender application's own share (the system
  calls and the wake-up), so that latency_sent = app + rtt;
- ``latency_kernel`` = P8 - tx: from the send call to the reply at the sender endpoint's
  interface, what iputils ping reports (its receive time is the kernel's SO_TIMESTAMP).
"""

from __future__ import annotations

import numpy as np

from netassay.counters.capture import POINT_NAMES

SEGMENTS = ("rtt", "overhead", "wire", "response")
PARTS = (
    "overhead_out",
    "overhead_back",
    "wire_out",
    "wire_back",
    "response_in",
    "turnaround",
    "response_out",
)
APP = ("latency", "latency_sent", "send_delay", "app", "latency_kernel")
ALL = (*SEGMENTS, *PARTS, *APP)
# the chain of times a probe's capture must follow, in order
CHAIN = ("tx", *POINT_NAMES, "rx")


def _d(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """b - a as signed int64 (times are uint64 ns)."""
    return b.astype(np.int64) - a.astype(np.int64)


def compute(
    sched: np.ndarray, tx: np.ndarray, rx: np.ndarray, points: dict[str, np.ndarray] | None
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Segments of a batch of probes, and counts: answered, captured, out_of_order.

    Every array holds one value per probe (0: not sent, not answered, not seen). The app
    segments cover every answered probe; the capture segments only the probes every
    point saw (``captured``), in order along ``CHAIN``.
    """
    answered = (rx > 0) & (tx > 0)
    out: dict[str, np.ndarray] = {
        "latency": _d(sched[answered], rx[answered]),
        "latency_sent": _d(tx[answered], rx[answered]),
        "send_delay": _d(sched[tx > 0], tx[tx > 0]),
    }
    counts = {"answered": int(answered.sum()), "captured": 0, "out_of_order": 0}
    if points is None:
        return out, counts
    p = [points[n] for n in POINT_NAMES]
    seen = answered.copy()
    for t in p:
        seen &= t > 0
    counts["captured"] = int(seen.sum())
    p1, p2, p3, p4, p5, p6, p7, p8 = (t[seen] for t in p)
    t_tx, t_rx = tx[seen], rx[seen]
    out.update(
        overhead_out=_d(p1, p2),
        overhead_back=_d(p7, p8),
        wire_out=_d(p2, p3),
        wire_back=_d(p6, p7),
        response_in=_d(p3, p4),
        turnaround=_d(p4, p5),
        response_out=_d(p5, p6),
        rtt=_d(p1, p8),
        response=_d(p3, p6),
        app=_d(t_tx, p1) + _d(p8, t_rx),
        latency_kernel=_d(t_tx, p8),
    )
    out["overhead"] = out["overhead_out"] + out["overhead_back"]
    out["wire"] = out["wire_out"] + out["wire_back"]
    chain = np.stack([t_tx, p1, p2, p3, p4, p5, p6, p7, p8, t_rx]).astype(np.int64)
    counts["out_of_order"] = int((np.diff(chain, axis=0) < 0).any(axis=0).sum())
    return out, counts


def lost_after(tx: np.ndarray, rx: np.ndarray, points: dict[str, np.ndarray]) -> dict[str, int]:
    """Where the lost probes were last seen: per capture point, the sent probes without a
    reply whose last stamp is at that point (``sent``: no point saw them). A probe last
    seen at ``snd_ep_in`` reached the sender endpoint's interface and was lost in the
    sender's own receive path (its socket): netassay's loss, not the path's."""
    lost = (tx > 0) & (rx == 0)
    out: dict[str, int] = {}
    if not lost.any():
        return out
    last = np.full(int(lost.sum()), -1)
    for i, name in enumerate(POINT_NAMES):
        last = np.where(points[name][lost] > 0, i, last)
    for i, n in zip(*np.unique(last, return_counts=True), strict=True):
        out["sent" if i < 0 else POINT_NAMES[i]] = int(n)
    return out
