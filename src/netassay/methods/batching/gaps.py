"""What batching does to a paced train, from two stamps per packet (pure).

Each packet has a time at the sender's egress and one at the receiver's ingress (the
rtt capture points ``snd_ep_out`` and ``rsp_ep_in``, CLOCK_MONOTONIC), in sequence
order. From them:

- the inter-arrival gaps at each point, and how far each receiver gap is from the
  sender's gap of the same two packets (its error);
- bursts: maximal runs of packets joined by gaps under a threshold (``gap_ns``: by
  default half the sent spacing, which pacing alone never produces); a packet alone is
  a burst of length 1, and the share in bursts counts packets in bursts of 2 or more.
  The same is counted at the sender, so that a burst the sender made (it fell behind
  and caught up) is not taken for one the receiver made;
- the period: the median gap that ends a burst at the receiver (the batching's beat);
- the latency each packet gained by waiting for its batch: its one-way time (ingress
  minus egress) less the run's smallest one-way time (a packet that did not wait).

With a third stamp per packet, the time a receiving application's recv call returned it
(``--probe udp``: the echo's socket, CLOCK_MONOTONIC too), the same figures for the
socket under keys prefixed ``socket_`` (its gaps, their error against the sender's,
bursts, burst lengths, period), and each packet's wait from ingress to the socket
(socket minus ingress, as it is: ``socket_wait_*``), over the packets all three points
saw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

QUANTILES = 101  # the gap distribution kept per run and point: q0, q1, ..., q100
STATS = {"p1": 1, "p50": 50, "p99": 99}


def paired(egress: np.ndarray, ingress: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The packets both points saw (a 0 stamp: not seen), in sequence order, as int64."""
    e, i = np.asarray(egress, dtype=np.int64), np.asarray(ingress, dtype=np.int64)
    seen = (e > 0) & (i > 0)
    return e[seen], i[seen]


def burst_lengths(gaps: np.ndarray, gap_ns: float) -> np.ndarray:
    """The lengths of the bursts of a train whose successive gaps are ``gaps`` (one
    fewer than its packets): a gap under ``gap_ns`` joins two packets."""
    if len(gaps) == 0:
        return np.zeros(0, dtype=np.int64)
    breaks = np.flatnonzero(np.asarray(gaps) >= gap_ns)  # gap k is between packets k, k+1
    ends = np.concatenate([breaks + 1, [len(gaps) + 1]])
    starts = np.concatenate([[0], breaks + 1])
    sizes: np.ndarray = (ends - starts).astype(np.int64)
    return sizes


def share_in_bursts(lengths: np.ndarray) -> float:
    """The share of packets in bursts of two or more."""
    total = int(lengths.sum())
    return float(lengths[lengths >= 2].sum() / total) if total else 0.0


def waiting(egress: np.ndarray, ingress: np.ndarray) -> np.ndarray:
    """Each packet's wait for its batch: its one-way time less the run's smallest."""
    owd = np.asarray(ingress, dtype=np.int64) - np.asarray(egress, dtype=np.int64)
    return owd - owd.min() if len(owd) else owd


def _q(values: np.ndarray, p: float) -> float | None:
    return float(np.percentile(values, p)) if len(values) else None


def _stats(values: np.ndarray, prefix: str) -> dict[str, float | None]:
    return {f"{prefix}_{k}_ns": _q(values, p) for k, p in STATS.items()}


def bursts(lens: np.ndarray, gaps: np.ndarray, gap_ns: float) -> dict[str, Any]:
    """A point's bursts: how many, their lengths (mean, median, longest), the period
    (the median gap that ends one)."""
    multi = lens[lens >= 2]
    ends = gaps[gaps >= gap_ns]
    return {
        "bursts": len(multi),
        "burst_len_mean": float(multi.mean()) if len(multi) else 1.0,
        "burst_len_p50": float(np.median(multi)) if len(multi) else 1.0,
        "burst_len_max": int(lens.max()) if len(lens) else 0,
        "period_ns": float(np.median(ends)) if len(ends) else None,
    }


def counted(lens: np.ndarray) -> dict[str, int]:
    lengths, counts = np.unique(lens, return_counts=True)
    return {str(int(k)): int(c) for k, c in zip(lengths, counts, strict=True)}


def _quantiles(gaps: np.ndarray) -> list[float]:
    q = np.linspace(0, 100, QUANTILES)
    return [round(float(x), 1) for x in np.percentile(gaps, q)] if len(gaps) else []


def at_socket(
    egress: np.ndarray, ingress: np.ndarray, socket: np.ndarray, gap_ns: float
) -> dict[str, Any]:
    """The socket's figures (see the module), keys prefixed ``socket_``, over the packets
    seen at all three points; the socket's gap quantiles under ``socket_gap_quantiles``."""
    e, i, k = (np.asarray(a, dtype=np.int64) for a in (egress, ingress, socket))
    seen = (e > 0) & (i > 0) & (k > 0)
    e, i, k = e[seen], i[seen], k[seen]
    ge, gk = np.diff(e), np.diff(k)
    lens = burst_lengths(gk, gap_ns)
    wait = k - i
    found = {
        "seen": len(k),
        **_stats(gk, "gap"),
        **_stats(np.abs(gk - ge), "gap_error"),
        "share_in_bursts": share_in_bursts(lens),
        **bursts(lens, gk, gap_ns),
        **_stats(wait, "wait"),
        "wait_max_ns": float(wait.max()) if len(wait) else None,
        "burst_lengths": counted(lens),
    }
    return {**{f"socket_{key}": v for key, v in found.items()},
            "socket_gap_quantiles": _quantiles(gk)}  # fmt: skip


def analyse(
    egress: np.ndarray,
    ingress: np.ndarray,
    spacing_ns: float,
    gap_ns: float | None = None,
    socket: np.ndarray | None = None,
) -> dict[str, Any]:
    """One run's gaps, bursts and waits (see the module); ``gap_ns`` None: half of
    ``spacing_ns``; ``socket`` the third stamps, or None (the socket figures are left
    out). Times in ns."""
    gap_ns = float(gap_ns if gap_ns is not None else spacing_ns / 2)
    e, i = paired(egress, ingress)
    ge, gi = np.diff(e), np.diff(i)
    rx_lens, tx_lens = burst_lengths(gi, gap_ns), burst_lengths(ge, gap_ns)
    wait = waiting(e, i)
    out = at_socket(egress, ingress, socket, gap_ns) if socket is not None else {}
    socket_q = out.pop("socket_gap_quantiles", None)
    return {
        "probes": len(np.asarray(egress)),
        "seen": len(e),
        "spacing_ns": float(spacing_ns),
        "gap_ns": gap_ns,
        **_stats(ge, "sender_gap"),
        **_stats(gi, "receiver_gap"),
        **_stats(np.abs(gi - ge), "gap_error"),
        "sender_share_in_bursts": share_in_bursts(tx_lens),
        "share_in_bursts": share_in_bursts(rx_lens),
        **bursts(rx_lens, gi, gap_ns),
        **_stats(wait, "wait"),
        "wait_max_ns": float(wait.max()) if len(wait) else None,
        "one_way_min_ns": float((i - e).min()) if len(e) else None,
        "burst_lengths": counted(rx_lens),
        "gap_quantiles": {
            "sender": _quantiles(ge),
            "receiver": _quantiles(gi),
            **({"socket": socket_q} if socket_q is not None else {}),
        },
        **out,
    }
