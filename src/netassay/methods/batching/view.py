"""A batching experiment in words and as one JSON object."""

from __future__ import annotations

import json
from typing import Any

from netassay.methods.batching.store import StoredBatching


def fmt_us(ns: Any) -> str:
    return "-" if ns is None else f"{float(ns) / 1e3:.1f} us"


def knobs_text(s: dict[str, Any]) -> str:
    out = f"gro {s['gro']}"
    if s.get("flush_ns") or s.get("defer"):
        out += f", gro_flush_timeout {float(s['flush_ns']) / 1e3:g} us, defer {s['defer']}"
    if s.get("threaded") == "on":
        out += ", threaded NAPI"
    if s.get("xdp") == "on":
        out += ", XDP pass program (native) on the veth"
    return out


def lines(r: StoredBatching) -> list[str]:
    exp, s = r.experiment, r.summary
    lengths = ", ".join(f"{k}: {v}" for k, v in s["burst_lengths"].items()) or "-"
    return [
        f"{exp.label}, experiment {exp.id}: batching on path {s['path']} at"
        f" {s['rate_pps']:g} probes/s (sent spacing {fmt_us(s['spacing_ns'])}); {knobs_text(s)}",
        f"  {s['runs_stored']} run(s), {s['seen']:,} of {s['probes']:,} probes seen at both"
        f" points; medians over the runs:",
        f"  gaps: sender p50 {fmt_us(s['sender_gap_p50_ns'])}, receiver p50"
        f" {fmt_us(s['receiver_gap_p50_ns'])}; receiver minus sender |gap| p50"
        f" {fmt_us(s['gap_error_p50_ns'])}, p99 {fmt_us(s['gap_error_p99_ns'])}",
        f"  bursts (gap under {fmt_us(s['gap_ns'])}): {s['share_in_bursts']:.1%} of packets at"
        f" the receiver ({s['sender_share_in_bursts']:.1%} at the sender), mean length"
        f" {s['burst_len_mean']:.1f}, period {fmt_us(s['period_ns'])}",
        f"  waiting for the batch: p50 {fmt_us(s['wait_p50_ns'])}, p99"
        f" {fmt_us(s['wait_p99_ns'])}, max {fmt_us(s['wait_max_ns'])}",
        f"  burst lengths (length: bursts): {lengths}",
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
           **r.summary}  # fmt: skip
    return json.dumps(obj, sort_keys=True, allow_nan=False)
