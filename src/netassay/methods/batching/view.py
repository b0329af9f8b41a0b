"""A batching experiment in words and as one JSON object."""

from __future__ import annotations

import json
from typing import Any

from netassay.methods.batching.store import BatchingSocket, BatchingSummary, StoredBatching
from netassay.units import fmt_us


def knobs_text(s: BatchingSummary) -> str:
    out = f"gro {s.gro}"
    if s.flush_ns or s.defer:
        out += f", gro_flush_timeout {float(s.flush_ns or 0) / 1e3:g} us, defer {s.defer}"
    if s.threaded == "on":
        out += ", threaded NAPI"
    if s.xdp == "on":
        out += ", XDP pass program (native) on the veth"
    if s.busy_poll_us:
        out += f", the echo's socket busy-polls {s.busy_poll_us} us"
    return out


def napi_text(ids: dict[str, int]) -> str:
    """Datagrams per NAPI id at the echo's socket, in words (0: no NAPI instance)."""
    return (
        ", ".join(
            f"{n:,} with {'no NAPI instance (id 0)' if not int(k) else f'NAPI id {k}'}"
            for k, n in ids.items()
        )
        or "-"
    )


def _lengths(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "-"


def socket_lines(s: BatchingSocket | None) -> list[str]:
    """The echo socket's figures (--probe udp), or none."""
    if s is None:
        return []
    return [
        f"  at the echo's socket (its recv call returned the probe; {s.socket_seen:,} probes"
        f" stamped): gaps p50 {fmt_us(s.socket_gap_p50_ns)}; socket minus sender |gap| p50"
        f" {fmt_us(s.socket_gap_error_p50_ns)}, p99 {fmt_us(s.socket_gap_error_p99_ns)}",
        f"  bursts at the socket: {s.socket_share_in_bursts:.1%} of packets, mean length"
        f" {s.socket_burst_len_mean:.1f}, median {s.socket_burst_len_p50:.0f}, period"
        f" {fmt_us(s.socket_period_ns)}; lengths: {_lengths(s.socket_burst_lengths)}",
        f"  wait from ingress to the socket: p1 {fmt_us(s.socket_wait_p1_ns)}, p50"
        f" {fmt_us(s.socket_wait_p50_ns)}, p99 {fmt_us(s.socket_wait_p99_ns)}, max"
        f" {fmt_us(s.socket_wait_max_ns)}",
        *(
            [f"  datagrams at the echo's socket: {napi_text(s.socket_napi_ids)}"]
            if s.socket_napi_ids is not None
            else []
        ),
    ]


def lines(r: StoredBatching) -> list[str]:
    exp, s = r.experiment, r.summary
    probe = " udp" if s.probe == "udp" else ""
    return [
        f"{exp.label}, experiment {exp.id}: batching on path {s.path} at"
        f" {s.rate_pps:g}{probe} probes/s (sent spacing {fmt_us(s.spacing_ns)});"
        f" {knobs_text(s)}",
        f"  {s.runs_stored} run(s), {s.seen:,} of {s.probes:,} probes seen at both"
        f" points; medians over the runs:",
        f"  gaps: sender p50 {fmt_us(s.sender_gap_p50_ns)}, receiver p50"
        f" {fmt_us(s.receiver_gap_p50_ns)}; receiver minus sender |gap| p50"
        f" {fmt_us(s.gap_error_p50_ns)}, p99 {fmt_us(s.gap_error_p99_ns)}",
        f"  bursts (gap under {fmt_us(s.gap_ns)}): {s.share_in_bursts:.1%} of packets at"
        f" the receiver ({s.sender_share_in_bursts:.1%} at the sender), mean length"
        f" {s.burst_len_mean:.1f}, period {fmt_us(s.period_ns)}",
        f"  waiting for the batch: p50 {fmt_us(s.wait_p50_ns)}, p99"
        f" {fmt_us(s.wait_p99_ns)}, max {fmt_us(s.wait_max_ns)}",
        f"  burst lengths (length: bursts): {_lengths(s.burst_lengths)}",
        *socket_lines(s.socket),
    ]


def group_text(g: dict[str, Any]) -> str:
    """A batching group of a campaign: the wait p50 (median over the cells, range), the
    share in bursts, the mean burst length."""
    w = g["wait_p50_ns"]
    spread = f" [{fmt_us(w['min'])}..{fmt_us(w['max'])}]" if w["n"] > 1 else ""
    return (
        f"wait p50 {fmt_us(w['median'])}{spread}; in bursts "
        f"{g['share_in_bursts']['median']:.1%}; mean burst {g['burst_len_mean']['median']:.1f}"
    )


def text(r: StoredBatching) -> str:
    return "\n".join(["", *lines(r)])


def as_json(r: StoredBatching) -> str:
    exp = r.experiment
    obj = {"kind": exp.kind, "label": exp.label, "experiment_id": exp.id, "db": str(r.db),
           **r.summary.to_json()}  # fmt: skip
    return json.dumps(obj, sort_keys=True, allow_nan=False)
