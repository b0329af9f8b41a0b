"""Both directions at once (``--bidirectional``): a generator and a counting sink at
each end of the embedded testbed.

The forward direction is the testbed's own (generator namespace -> SUT -> sink); the
reverse one is sent from the sink's namespace back to the generator's address
(``testbed.reverse``) and counted by an XDP sink on the generator's veth
(``counters.loss.REVERSE_KEY``). Both generators run at once, each at the offered load
per direction. A trial's record is the aggregate of both directions (FD.io CSIT's
convention: its offered and achieved rates are the sums of both directions', its sent
and received both directions' frames, its loss split the sum of theirs); each
direction's own (its load, planned, sent, received, lost and where) is kept in
``counters["bidirectional"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from netassay.counters.loss import REVERSE_KEY, locate_both
from netassay.counters.sink import XDP_KEY
from netassay.hist import SinkHist
from netassay.testbed.bed import Testbed
from netassay.traffic.generator import GeneratorRecord, GenResult

DIRECTIONS = ("forward", "reverse")
CONVENTION = "aggregate of both directions (FD.io CSIT's convention)"


def send_both(tb: Testbed, rate_pps: float, duration_s: float) -> tuple[GenResult, GenResult]:
    """Both generators at ``rate_pps`` each, side by side, on the generator's CPU:
    (forward, reverse). Each waits for its sends' times by yielding the CPU
    (``netassay-gen --share-cpu``): two busy polls pinned to one CPU take turns of a
    scheduler slice, and each was 13-20 ms late at p99 at 60 kpps (measured)."""
    with ThreadPoolExecutor(2, thread_name_prefix="generator") as pool:
        fwd = pool.submit(tb.send, rate_pps, duration_s, False, True)
        rev = pool.submit(tb.send, rate_pps, duration_s, True, True)
        return fwd.result(), rev.result()


def _most(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def combined(fwd: GenResult, rev: GenResult) -> GenResult:
    """Both generators' runs as one (the trial's aggregate): counts and rates added,
    the longer run's duration, the later lateness, a signal or a missed rate of either."""
    rate = (fwd.rate_pps or 0.0) + (rev.rate_pps or 0.0)
    achieved = fwd.achieved_rate_pps + rev.achieved_rate_pps
    res = GenResult(
        technique=fwd.technique,
        planned=fwd.planned + rev.planned,
        sent=fwd.sent + rev.sent,
        first_tx_ns=min(fwd.first_tx_ns, rev.first_tx_ns),
        last_tx_ns=max(fwd.last_tx_ns, rev.last_tx_ns),
        duration_s=max(fwd.duration_s, rev.duration_s),
        rate_pps=rate or None,
        achieved_rate_pps=achieved,
        rate_error=achieved / rate - 1.0 if rate else None,
        lateness_max_ns=_most(fwd.lateness_max_ns, rev.lateness_max_ns),
        lateness_p99_ns=_most(fwd.lateness_p99_ns, rev.lateness_p99_ns),
        retries=fwd.retries + rev.retries,
        stopped_by_signal=fwd.stopped_by_signal or rev.stopped_by_signal,
        ok=fwd.ok and rev.ok,
    )
    return res.with_report(directions={"forward": fwd.raw, "reverse": rev.raw})


Locate = Callable[
    [tuple[int, int, int, int], tuple[int, int, int, int], dict[str, int], int],
    tuple[dict[str, int], dict[str, int]],
]


def split(
    pair: tuple[GenResult, GenResult], d: dict[str, int], key: str, ip_version: int,
    locate: Locate | None = None,
) -> tuple[tuple[int, int], tuple[dict[str, int], dict[str, int]]]:  # fmt: skip
    """Each direction's received frames (the sink's count ``key``, the reverse sink's)
    and loss split, from one trial's counter deltas ``d``; ``locate``: a testbed kind's
    own split (an external testbed's ports), else the namespaces' (``locate_both``)."""
    fwd, rev = pair
    received = int(d.get(key, 0)), int(d.get(REVERSE_KEY, 0))
    locs = (locate or locate_both)(
        (fwd.planned, fwd.sent, received[0], fwd.retries),
        (rev.planned, rev.sent, received[1], rev.retries),
        d,
        ip_version,
    )
    return received, locs


class Direction(TypedDict):
    """What a trial keeps of one direction: its generator's counts, the frames its sink
    received and the rest lost, where (by location), what its generator reported
    (``traffic.generator.GeneratorRecord``) and, with --latency, its histogram."""

    planned: int
    sent: int
    received: int
    lost: int
    achieved_rate_pps: float
    loss_location: dict[str, int]
    generator: GeneratorRecord
    latency: NotRequired[dict[str, Any]]  # ``hist.SinkHist.to_json``


class Directions(TypedDict):
    """What a --bidirectional trial keeps of its directions (``counters["bidirectional"]``):
    the load offered in each, the convention its own rate and counts follow (both
    directions' sum), and each direction's own."""

    rate_pps_per_direction: float
    record: str
    forward: Direction
    reverse: Direction


def _direction(res: GenResult, received: int, loss: dict[str, int]) -> Direction:
    return {
        "planned": res.planned,
        "sent": res.sent,
        "received": received,
        "lost": res.sent - received,
        "achieved_rate_pps": float(res.achieved_rate_pps),
        "loss_location": loss,
        "generator": res.recorded(),
    }


def record(
    rate_pps: float, pair: tuple[GenResult, GenResult], d: dict[str, int], key: str,
    ip_version: int, locate: Locate | None = None,
) -> Directions:  # fmt: skip
    """What a trial keeps of each direction (``counters["bidirectional"]``)."""
    (rx_f, rx_r), (loc_f, loc_r) = split(pair, d, key, ip_version, locate)
    return {
        "rate_pps_per_direction": float(rate_pps),
        "record": CONVENTION,
        "forward": _direction(pair[0], rx_f, loc_f),
        "reverse": _direction(pair[1], rx_r, loc_r),
    }


@dataclass
class Latencies:
    """Each direction's latency histogram of one trial (None: that sink keeps none)."""

    forward: SinkHist | None
    reverse: SinkHist | None

    def merged(self) -> SinkHist | None:
        """Both directions' frames in one histogram (the trial's aggregate)."""
        if self.forward is None or self.reverse is None:
            return self.forward or self.reverse
        return SinkHist(self.forward.to_json()).merge(self.reverse)


def keep_latencies(both: Directions, lat: Latencies) -> None:
    """Each direction's histogram into its part of ``counters["bidirectional"]``."""
    for part, h in ((both["forward"], lat.forward), (both["reverse"], lat.reverse)):
        if h is not None:
            part["latency"] = h.to_json()


def latency_warnings(
    lat: Latencies, d: dict[str, int], check: Callable[[SinkHist, int], list[str]]
) -> list[str]:
    """Each direction's histogram checked against its own sink's count (``check``: the
    trial engine's), the warning naming its direction."""
    out = []
    for name, h, key in zip(DIRECTIONS, (lat.forward, lat.reverse), (XDP_KEY, REVERSE_KEY),
                            strict=True):  # fmt: skip
        if h is not None:
            out += [f"{w} ({name} direction)" for w in check(h, int(d.get(key, 0)))]
    return out
