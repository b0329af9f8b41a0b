"""One trial: counters before, paced traffic, wait until quiet, counters after, loss split."""

from __future__ import annotations

import time
from typing import Any

from netassay import quality
from netassay.campaign.plan import rate_warning, stall_warning
from netassay.counters.loss import flat_deltas, flatten, locate_loss, wrap_bits
from netassay.counters.snapshot import snapshot, wait_quiet
from netassay.errors import GeneratorError
from netassay.store.db import TrialRecord, utc_now
from netassay.testbed.bed import Testbed

SOURCE = "netassay-testbed"


def gen_field(res: Any, key: str, default: Any = None) -> Any:
    """A field of the generator's result (a dict or an object with attributes)."""
    if isinstance(res, dict):
        return res.get(key, default)
    return getattr(res, key, default)


def send(tb: Testbed, rate_pps: float, duration_s: float) -> Any:
    """Run netassay-gen in the generator namespace (pinned as the testbed says)."""
    try:
        from netassay.traffic.generator import run_generator
    except ImportError as exc:
        raise GeneratorError(
            "the generator wrapper is missing",
            str(exc),
            "update netassay (it ships netassay.traffic.generator) and run 'make gen'",
        ) from exc
    t = tb.target
    return run_generator(
        t["netns"],
        t["dev"],
        t["dst_mac"],
        t["src"],
        t["dst"],
        rate_pps,
        duration_s,
        size_bytes=tb.cfg.size_bytes,
        flows=tb.cfg.flows,
        best_effort=True,
        extra=tb.gen_flags(),
        timeout_s=duration_s + 30,
    )


def flow_deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def measure(
    tb: Testbed, load_index: int, repetition: int, rate_pps: float, duration_s: float
) -> TrialRecord:
    """Run one trial on the testbed and return the record to store."""
    namespaces = tb.state["namespaces"]
    utc = utc_now()
    before = snapshot(namespaces)
    res = send(tb, rate_pps, duration_s)
    t_stop = time.monotonic()
    _, settled = wait_quiet(namespaces["sink"])
    settle_wait_s = time.monotonic() - t_stop
    after = snapshot(namespaces)
    fb, fa = flatten(before), flatten(after)
    d, warnings = flat_deltas(fb, fa, wrap_bits(fb))
    planned = int(gen_field(res, "planned", round(rate_pps * duration_s)))
    sent = int(gen_field(res, "sent", 0))
    received = int(d.get("sink/nft/na_rx/packets", 0))
    achieved = gen_field(res, "achieved_rate_pps")
    loss = locate_loss(planned, sent, received, d, tb.cfg.ip_version)
    retries = int(gen_field(res, "retries", 0) or 0)
    warnings += _warnings(rate_pps, achieved, settled, sent, received, loss, retries, res)
    flows = flow_deltas(before.get("sink_flows", {}), after.get("sink_flows", {}))
    counters = {
        "before": before,
        "after": after,
        "deltas": {k: v for k, v in d.items() if v},
        "sink_flows": flows,
        "generator": _gen_dict(res),
        "settle_wait_s": round(settle_wait_s, 3),
    }
    return TrialRecord(
        load_index=load_index,
        repetition=repetition,
        rate_pps=float(rate_pps),
        duration_s=float(gen_field(res, "duration_s") or duration_s),
        sent=sent,
        received=received,
        source=SOURCE,
        achieved_rate_pps=None if achieved is None else float(achieved),
        loss_location=loss,
        counters=counters,
        warnings=warnings,
        utc=utc,
    )


def _warnings(
    rate_pps: float,
    achieved: float | None,
    settled: bool,
    sent: int,
    received: int,
    loss: dict[str, int],
    retries: int,
    res: Any,
) -> list[str]:
    out = []
    for w in (rate_warning(rate_pps, achieved), stall_warning(gen_field(res, "lateness_max_ns"))):
        if w:
            out.append(w)
    if not settled:
        out.append("counters still moving 5 s after the generator stopped")
    if received > sent:
        out.append(f"received {received} > sent {sent}: foreign packets matched the counter")
    if loss.get("unaccounted", 0) != 0:
        out.append(f"{loss['unaccounted']} lost packet(s) not explained by any kernel counter")
    if loss.get("unsent", 0) > 0:
        out.append(f"generator sent {loss['unsent']} packet(s) fewer than planned")
    if retries:
        out.append(f"the kernel refused {retries} send(s); the generator retried them")
    if gen_field(res, "stopped_by_signal"):
        out.append("the generator was stopped by a signal")
    return out


def _gen_dict(res: Any) -> dict[str, Any]:
    keys = (
        "technique",
        "planned",
        "sent",
        "first_tx_ns",
        "last_tx_ns",
        "duration_s",
        "rate_pps",
        "achieved_rate_pps",
        "rate_error",
        "lateness_max_ns",
        "lateness_p99_ns",
        "retries",
        "stopped_by_signal",
        "ok",
    )
    return {k: gen_field(res, k) for k in keys}


def generator_trouble(rec: TrialRecord) -> list[str]:
    """The warnings that say the generator, not the SUT, shaped this trial."""
    return quality.generator_trouble(rec.warnings)
