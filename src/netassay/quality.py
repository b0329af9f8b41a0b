"""Measurement-quality vocabulary shared by the trial engine, the importers and the analysis.

A trial carries warnings (plain sentences, stored with it). A warning that starts with
one of FAULTS says the measurement itself was spoiled (by the generator, a counter or an
interrupted run), so what the trial shows is not the SUT's behaviour: the trial is kept
in the store, named, and left out of the statistics; its loss is never counted against
the SUT. ``exclusion`` is the one definition of that rule: the store writes its result
into the ``excluded`` column of every trial, and every reader selects on that column.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from netassay.units import fmt_rate

RATE_TOLERANCE = 0.001  # achieved load off the offered load by more than 0.1% is flagged
STALL_NS = 10_000_000  # without a known queue: a send 10 ms late is a stall

GENERATOR_LIMIT = "generator limit"
RATE_OVERSHOOT = "rate overshoot"
GENERATOR_STALL = "generator stall"
COUNTER_FAULT = "counter fault"
TRUNCATED = "truncated trial"
SINK_FAULT = "sink fault"
# a command the user named (a hook around a trial, a reconfiguration) failed: the SUT was
# not in the state the trial was to measure
COMMAND_FAULT = "command fault"
# the testbed changed under the trial: a namespace deleted, a link down (trial.integrity)
TESTBED_FAULT = "testbed fault"

GENERATOR_WARNINGS = (GENERATOR_LIMIT, RATE_OVERSHOOT, GENERATOR_STALL)
FAULTS = (*GENERATOR_WARNINGS, COUNTER_FAULT, TRUNCATED, SINK_FAULT, TESTBED_FAULT, COMMAND_FAULT)
# A stall this share of the trial's duration or longer (the generator sent nothing while
# frames were due: it was stopped, or had no CPU) is what made the trial's rate: it is
# said with that rate, and never as a generator limit (the generator's reach is not in
# question). Whether it is a fault is the stall rule's (stall_warning, stall_is_harmless).
LONG_STALL_SHARE = 0.1

# A warning that names loss the SUT did not cause but that leaves the trial usable.
SINK_DROPS = "sink drops"
# A stall that cannot have caused the trial's loss: a note, the trial used.
STALL_HARMLESS = "stall without harm"
# Where a stall's catch-up burst can overflow a queue (counters.loss locations): a
# stall with loss anywhere else (a drop rule, the forwarding path) did not cause it.
BURST_REACHES = ("gen_egress", "sut_ingress", "sut_egress", "between_ports", "unaccounted")
# Received above sent by at most this share of sent (a PASTRAMI import, whose counts
# are a port's and take in the link's own frames): foreign frames, the trial used with
# no loss; beyond it, or any excess where only test frames are counted, a counter fault.
FOREIGN_FRAMES = "foreign frames"
FOREIGN_FRAMES_SHARE = 1e-5


def faults(warnings: Iterable[str]) -> list[str]:
    """The warnings that make a trial a measurement fault."""
    return [w for w in warnings if w.startswith(FAULTS)]


def generator_trouble(warnings: Iterable[str]) -> list[str]:
    """The warnings that say the generator, not the SUT, shaped a trial (worth a retry)."""
    return [w for w in warnings if w.startswith(GENERATOR_WARNINGS)]


def generator_bound(found: list[str]) -> bool:
    """Faults that say only that the generator could not keep the load: a generator
    limit, with at most its stalls and the shortfall its deadline left (no counter,
    sink or signal fault beside them)."""
    own = (*GENERATOR_WARNINGS, f"{TRUNCATED}: the generator sent")
    return any(f.startswith(GENERATOR_LIMIT) for f in found) and all(
        f.startswith(own) for f in found
    )


def exclusion(warnings: Iterable[str]) -> str | None:
    """Why a trial is left out of the statistics (its fault warnings), or None."""
    found = faults(warnings)
    return "; ".join(found) if found else None


def exclusion_of_json(warnings_json: str | None) -> str | None:
    """``exclusion`` of a stored ``warnings_json`` value (for the store's SQL function)."""
    if not warnings_json or warnings_json == "[]":
        return None
    try:
        warnings = json.loads(warnings_json)
    except ValueError:
        return None
    return exclusion(w for w in warnings if isinstance(w, str))


def received_over_sent(sent: int, received: int) -> str:
    """The counter fault of a trial that received more test frames than were sent (the
    store's migration 6 writes the same words in SQL: keep them equal)."""
    return (
        f"{COUNTER_FAULT}: received {received} > sent {sent} (by {received - sent}): "
        "more than foreign frames explain; not SUT loss"
    )


def foreign_frames(sent: int, received: int) -> str:
    """The note of a trial whose port counted a few frames more than the test sent."""
    return (
        f"{FOREIGN_FRAMES}: received exceeds sent by {received - sent} (within "
        f"{FOREIGN_FRAMES_SHARE * 1e6:g} ppm: other frames on the link): counted as no loss"
    )


def within_foreign_share(sent: int, received: int) -> bool:
    """Received above sent by no more than foreign frames explain (FOREIGN_FRAMES_SHARE)."""
    return received - sent <= sent * FOREIGN_FRAMES_SHARE


def rate_kind(offered: float, achieved: float) -> str | None:
    """'generator limit' / 'rate overshoot' when off by more than the tolerance, else None."""
    err = achieved / offered - 1
    if abs(err) <= RATE_TOLERANCE:
        return None
    return GENERATOR_LIMIT if err < 0 else RATE_OVERSHOOT


def stall_warning(
    lateness_max_ns: float | None, rate_pps: float, queue_pkts: int | None
) -> str | None:
    """A generator stall judged by what it does: after a stall of ``lateness_max_ns`` the
    generator sends the ``rate x stall`` frames that fell due in one catch-up burst; when
    that burst could overflow the smallest queue on the path (``queue_pkts``: the SUT's
    backlog, the wire's qdisc), the loss it causes is not the SUT's at the offered load.
    Without a known queue, a stall over STALL_NS is flagged."""
    if lateness_max_ns is None or lateness_max_ns <= 0:
        return None
    burst = rate_pps * lateness_max_ns / 1e9
    ms = lateness_max_ns / 1e6
    if queue_pkts is not None and burst >= queue_pkts:
        return (
            f"{GENERATOR_STALL}: a send was {ms:.1f} ms late; its catch-up burst of "
            f"~{burst:,.0f} frames could overflow the smallest queue on the path "
            f"({queue_pkts:,} packets)"
        )
    if queue_pkts is None and lateness_max_ns > STALL_NS:
        return (
            f"{GENERATOR_STALL}: a send was {ms:.1f} ms late; the catch-up burst is not the "
            "offered load"
        )
    return None


def stall_burst(lateness_max_ns: float | None, rate_pps: float) -> int:
    """The frames a stall of ``lateness_max_ns`` leaves to one catch-up burst."""
    return round(rate_pps * max(lateness_max_ns or 0.0, 0.0) / 1e9)


def stall_is_harmless(
    loss_location: dict[str, int], burst: int = 0, queues: dict[str, int] | None = None
) -> bool:
    """A stall's burst cannot have caused the loss: none is where a burst overflows a
    queue, i.e. at a location of BURST_REACHES whose queue (``queues``: depth by
    location, where known) is no deeper than the burst."""
    depth = queues or {}
    return all(loss_location.get(k, 0) <= 0 or burst < depth.get(k, 0) for k in BURST_REACHES)


def stall_harmless(stall: str, why: str) -> str:
    """The note that replaces a stall's fault when it cannot have caused the loss (the
    trial used; the stall kept in words)."""
    return f"{STALL_HARMLESS} ({why}): {stall[len(GENERATOR_STALL) + 2 :]}"


def disarm_stall(warnings: list[str], why: str) -> list[str]:
    """``warnings`` with a generator stall fault turned into its harmless note."""
    return [stall_harmless(w, why) if w.startswith(GENERATOR_STALL) else w for w in warnings]


def only_stalled(warnings: list[str]) -> bool:
    """The trial's only faults are generator stalls."""
    found = faults(warnings)
    return bool(found) and all(w.startswith(GENERATOR_STALL) for w in found)


def rate_warning(offered_pps: float, achieved_pps: float | None) -> str | None:
    """A warning when the achieved load is off the offered load by more than 0.1%."""
    if achieved_pps is None:
        return "achieved load unknown: the generator did not report it"
    err = achieved_pps / offered_pps - 1
    kind = rate_kind(offered_pps, achieved_pps)
    if kind:
        return (
            f"{kind}: achieved {fmt_rate(achieved_pps)} of {fmt_rate(offered_pps)} offered "
            f"({err:+.2%}); loss at this load is not SUT loss"
        )
    return None
