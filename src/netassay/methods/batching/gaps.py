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

from typing import NotRequired, TypedDict

import numpy as np

QUANTILES = 101  # the gap distribution kept per run and point: q0, q1, ..., q100


class Bursts(TypedDict):
    """A point's bursts (``bursts``): how many of two or more, their lengths (mean,
    median: 1.0 when there is none; longest: 0 without packets), the period (None: no
    gap ended one)."""

    bursts: int
    burst_len_mean: float
    burst_len_p50: float
    burst_len_max: int
    period_ns: float | None


class GapQuantiles(TypedDict):
    """A run's gap distribution per point (QUANTILES of them; []: no gap there); the
    echo's socket only with its stamps."""

    sender: list[float]
    receiver: list[float]
    socket: NotRequired[list[float]]


class RunFigures(Bursts):
    """A run's figures (``analyse``), stored as they are (``batching_runs.summary_json``,
    a dict: JSON): probes sent and seen at both points, the spacing and the burst
    threshold, the gaps, their error and the waits (p1, p50, p99; None: no packet for
    it), the shares in bursts and the receiver's bursts, burst lengths (length: bursts)
    and gap quantiles. With the echo's socket (--probe udp) its figures too (the
    ``socket_`` keys, ``at_socket``; its quantiles under ``gap_quantiles``), and with
    its busy polling (``measure``, a run stored since --busy-poll) the polling asked
    and the datagrams per NAPI id the socket saw."""

    probes: int
    seen: int
    spacing_ns: float
    gap_ns: float
    sender_gap_p1_ns: float | None
    sender_gap_p50_ns: float | None
    sender_gap_p99_ns: float | None
    receiver_gap_p1_ns: float | None
    receiver_gap_p50_ns: float | None
    receiver_gap_p99_ns: float | None
    gap_error_p1_ns: float | None
    gap_error_p50_ns: float | None
    gap_error_p99_ns: float | None
    sender_share_in_bursts: float
    share_in_bursts: float
    wait_p1_ns: float | None
    wait_p50_ns: float | None
    wait_p99_ns: float | None
    wait_max_ns: float | None
    one_way_min_ns: float | None
    burst_lengths: dict[str, int]
    gap_quantiles: GapQuantiles
    socket_seen: NotRequired[int]
    socket_gap_p1_ns: NotRequired[float | None]
    socket_gap_p50_ns: NotRequired[float | None]
    socket_gap_p99_ns: NotRequired[float | None]
    socket_gap_error_p1_ns: NotRequired[float | None]
    socket_gap_error_p50_ns: NotRequired[float | None]
    socket_gap_error_p99_ns: NotRequired[float | None]
    socket_share_in_bursts: NotRequired[float]
    socket_bursts: NotRequired[int]
    socket_burst_len_mean: NotRequired[float]
    socket_burst_len_p50: NotRequired[float]
    socket_burst_len_max: NotRequired[int]
    socket_period_ns: NotRequired[float | None]
    socket_wait_p1_ns: NotRequired[float | None]
    socket_wait_p50_ns: NotRequired[float | None]
    socket_wait_p99_ns: NotRequired[float | None]
    socket_wait_max_ns: NotRequired[float | None]
    socket_burst_lengths: NotRequired[dict[str, int]]
    busy_poll_us: NotRequired[int]
    socket_napi_ids: NotRequired[dict[str, int]]
    socket_napi_other: NotRequired[int]


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


def bursts(lens: np.ndarray, gaps: np.ndarray, gap_ns: float) -> Bursts:
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
    found: RunFigures, egress: np.ndarray, ingress: np.ndarray, socket: np.ndarray, gap_ns: float
) -> None:
    """Add the socket's figures (see the module) to a run's, keys prefixed ``socket_``,
    over the packets seen at all three points; its gap quantiles under ``socket``."""
    e, i, k = (np.asarray(a, dtype=np.int64) for a in (egress, ingress, socket))
    seen = (e > 0) & (i > 0) & (k > 0)
    e, i, k = e[seen], i[seen], k[seen]
    ge, gk = np.diff(e), np.diff(k)
    lens = burst_lengths(gk, gap_ns)
    wait, error = k - i, np.abs(gk - ge)
    b = bursts(lens, gk, gap_ns)
    found["socket_seen"] = len(k)
    found["socket_gap_p1_ns"] = _q(gk, 1)
    found["socket_gap_p50_ns"] = _q(gk, 50)
    found["socket_gap_p99_ns"] = _q(gk, 99)
    found["socket_gap_error_p1_ns"] = _q(error, 1)
    found["socket_gap_error_p50_ns"] = _q(error, 50)
    found["socket_gap_error_p99_ns"] = _q(error, 99)
    found["socket_share_in_bursts"] = share_in_bursts(lens)
    found["socket_bursts"] = b["bursts"]
    found["socket_burst_len_mean"] = b["burst_len_mean"]
    found["socket_burst_len_p50"] = b["burst_len_p50"]
    found["socket_burst_len_max"] = b["burst_len_max"]
    found["socket_period_ns"] = b["period_ns"]
    found["socket_wait_p1_ns"] = _q(wait, 1)
    found["socket_wait_p50_ns"] = _q(wait, 50)
    found["socket_wait_p99_ns"] = _q(wait, 99)
    found["socket_wait_max_ns"] = float(wait.max()) if len(wait) else None
    found["socket_burst_lengths"] = counted(lens)
    found["gap_quantiles"]["socket"] = _quantiles(gk)


def analyse(
    egress: np.ndarray,
    ingress: np.ndarray,
    spacing_ns: float,
    gap_ns: float | None = None,
    socket: np.ndarray | None = None,
) -> RunFigures:
    """One run's gaps, bursts and waits (see the module); ``gap_ns`` None: half of
    ``spacing_ns``; ``socket`` the third stamps, or None (the socket figures are left
    out). Times in ns."""
    gap_ns = float(gap_ns if gap_ns is not None else spacing_ns / 2)
    e, i = paired(egress, ingress)
    ge, gi = np.diff(e), np.diff(i)
    rx_lens, tx_lens = burst_lengths(gi, gap_ns), burst_lengths(ge, gap_ns)
    wait, error = waiting(e, i), np.abs(gi - ge)
    b = bursts(rx_lens, gi, gap_ns)
    found: RunFigures = {
        "probes": len(np.asarray(egress)),
        "seen": len(e),
        "spacing_ns": float(spacing_ns),
        "gap_ns": gap_ns,
        "sender_gap_p1_ns": _q(ge, 1), "sender_gap_p50_ns": _q(ge, 50),
        "sender_gap_p99_ns": _q(ge, 99),
        "receiver_gap_p1_ns": _q(gi, 1), "receiver_gap_p50_ns": _q(gi, 50),
        "receiver_gap_p99_ns": _q(gi, 99),
        "gap_error_p1_ns": _q(error, 1), "gap_error_p50_ns": _q(error, 50),
        "gap_error_p99_ns": _q(error, 99),
        "sender_share_in_bursts": share_in_bursts(tx_lens),
        "share_in_bursts": share_in_bursts(rx_lens),
        "bursts": b["bursts"], "burst_len_mean": b["burst_len_mean"],
        "burst_len_p50": b["burst_len_p50"], "burst_len_max": b["burst_len_max"],
        "period_ns": b["period_ns"],
        "wait_p1_ns": _q(wait, 1), "wait_p50_ns": _q(wait, 50), "wait_p99_ns": _q(wait, 99),
        "wait_max_ns": float(wait.max()) if len(wait) else None,
        "one_way_min_ns": float((i - e).min()) if len(e) else None,
        "burst_lengths": counted(rx_lens),
        "gap_quantiles": {"sender": _quantiles(ge), "receiver": _quantiles(gi)},
    }  # fmt: skip
    if socket is not None:
        at_socket(found, egress, ingress, socket, gap_ns)
    return found
