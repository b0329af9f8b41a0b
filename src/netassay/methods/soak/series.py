"""A soak's per-second series, its loss events and its verdict: pure, on plain data.

A segment is one trial (``trial.engine.measure``); while its generator runs, the sink's
running count and /proc/stat are read about every second (``run.Sampler``). The
segment's totals (sent, forwarded, lost and where) are the trial's, exact; their split
across its seconds is an estimate:

- received in a second: the sink's count at its end minus at its start (frames in flight
  at a boundary count in the next second; what arrived after the last read, before the
  counters settled, is added to the last second so that the seconds sum to the trial);
- offered in a second: what was sent, spread evenly over the time the generator ran
  (taken to end when its process returned), so that the seconds sum to ``sent``;
- lost (estimate): the segment's exact loss, split across its seconds in proportion to
  where the count fell short of the offer (none in a segment that lost nothing).

A second whose estimated loss ratio is above the goal starts an **event**; consecutive
such seconds (across segment boundaries) are one event. The **verdict** is over the
exact totals of every segment used: PASS when sum(sent - forwarded) / sum(sent) is at
most the goal, FAIL above it, INCONCLUSIVE when more than a quarter of the stored
segments are measurement faults or none is usable.

A segment's seconds are stored in its trial's counters as they are (``Segment``, each
second a ``Second``: TypedDicts); the events and the summary are computed when shown
(``Event``, ``SeriesSummary``: frozen dataclasses; ``store.SoakSummary.to_json()`` is
their JSON).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NotRequired, TypedDict

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
MAX_EXCLUDED_SHARE = 0.25  # more excluded segments than this: INCONCLUSIVE
GAP_S = 0.1  # about this much between segments (counters read, the generator restarted)


class Second(TypedDict):
    """One second of a segment (``per_second``): its start in the soak and length (s),
    frames offered and received in it, the loss split onto it (an estimate), each
    core's busy share over it; ``gap``: the second of an excluded segment (``timeline``
    marks it, the store does not keep it)."""

    t: float
    dt: float
    offered: float
    received: int
    loss_est: float
    cpu_busy: dict[str, float]
    gap: NotRequired[bool]


class Segment(TypedDict):
    """What a segment's trial keeps of the soak (``counters["soak"]``): its number, its
    start in the soak (s), the attempts it took, its seconds; the gap since the segment
    before's generator stopped (s; not there for the first segment of a run, nor after
    a discarded attempt)."""

    segment: int
    start_s: float
    attempts: int
    per_second: list[Second]
    gap_before_s: NotRequired[float]


@dataclass(frozen=True)
class Event:
    """A run of consecutive seconds above the goal (``events``): its start (s into the
    soak), length (s), seconds, the frames lost in it and its loss ratio (estimates)."""

    start_s: float
    length_s: float
    seconds: int
    lost_est: int
    loss_ratio_est: float


@dataclass(frozen=True)
class SeriesSummary:
    """A soak's figures over its stored segments (``summary``): the verdict and why, the
    goal, the segments planned, stored and excluded, whether it finished, the exact
    totals of the used segments (frames sent, forwarded; the loss ratio, None: none
    sent), the loss by place (places that lost frames), the events, the seconds read."""

    verdict: str
    reason: str
    goal: float
    segments_planned: int
    segments_stored: int
    segments_excluded: int
    finished: bool
    sent: int
    forwarded: int
    loss_ratio: float | None
    loss_location: dict[str, int]
    events: list[Event]
    seconds: int


def segment_lengths(duration_s: float, segment_s: float) -> list[float]:
    """The segments a soak of ``duration_s`` runs as: whole ``segment_s`` ones, the last
    shorter when the duration is not a multiple."""
    n, rest = divmod(round(duration_s * 1000), round(segment_s * 1000))
    return [segment_s] * n + ([rest / 1000] if rest else [])


def offered(bounds: Sequence[float], sent: int, active_s: float) -> list[float]:
    """Frames offered in each interval ``bounds[i]..bounds[i+1]`` (seconds since the
    sampler's start): ``sent`` spread over the generator's last ``active_s`` seconds."""
    end = bounds[-1]
    active = min(max(active_s, 1e-9), end) if end > 0 else 1e-9
    start = end - active
    out = []
    for a, b in pairwise(bounds):
        overlap = max(0.0, min(b, end) - max(a, start))
        out.append(sent * overlap / active)
    return out


def split_loss(offer: Sequence[float], received: Sequence[int], lost: int) -> list[float]:
    """The segment's exact ``lost`` split across its seconds where the count fell short
    of the offer (evenly by the offer when it never did)."""
    if lost <= 0 or not offer:
        return [0.0] * len(offer)
    short = [max(0.0, o - r) for o, r in zip(offer, received, strict=True)]
    weights = short if sum(short) > 0 else list(offer)
    total = sum(weights) or 1.0
    return [lost * w / total for w in weights]


def per_second(
    samples: Sequence[tuple[float, int | None, dict[str, float]]],
    sent: int,
    received: int,
    forwarded: int,
    active_s: float,
    start_s: float = 0.0,
) -> list[Second]:
    """A segment's seconds from the sampler's reads ``(time since its start, sink count,
    CPU busy per core over the second)``, the first read being the start (count only),
    and the trial's exact totals; ``start_s``: the segment's start in the soak."""
    reads = [(t, c) for t, c, _ in samples if c is not None]
    if len(reads) < 2:
        return []
    bounds = [t for t, _ in reads]
    got = [b - a for (_, a), (_, b) in pairwise(reads)]
    got[-1] += received - sum(got)  # what arrived after the last read: the last second's
    offer = offered(bounds, sent, active_s)
    lost = split_loss(offer, got, sent - forwarded)
    cpus = [cpu for _, count, cpu in samples if count is not None][1:]
    return [
        Second(
            t=round(start_s + bounds[i], 3),
            dt=round(bounds[i + 1] - bounds[i], 3),
            offered=round(offer[i], 1),
            received=got[i],
            loss_est=round(lost[i], 1),
            cpu_busy=cpus[i] if i < len(cpus) else {},
        )
        for i in range(len(got))
    ]


def loss_ratio(second: Second) -> float:
    return second["loss_est"] / second["offered"] if second["offered"] > 0 else 0.0


def events(seconds: Sequence[Second], goal: float) -> list[Event]:
    """Runs of consecutive seconds whose estimated loss ratio is above ``goal``: each
    its start (s into the soak), length (s), seconds and frames lost (estimate). A
    second marked ``gap`` (an excluded segment's) ends a run."""
    out: list[Event] = []
    run: list[Second] = []
    for s in [*seconds, None]:
        if s is not None and not s.get("gap") and loss_ratio(s) > goal:
            run.append(s)
            continue
        if run:
            lost = sum(x["loss_est"] for x in run)
            offer = sum(x["offered"] for x in run)
            out.append(
                Event(
                    start_s=run[0]["t"],
                    length_s=round(sum(x["dt"] for x in run), 3),
                    seconds=len(run),
                    lost_est=round(lost),
                    loss_ratio_est=lost / offer if offer else 0.0,
                )
            )
            run = []
    return out


def verdict(stored: int, excluded: int, sent: int, forwarded: int, goal: float) -> tuple[str, str]:
    """(PASS | FAIL | INCONCLUSIVE, why) from the segments' exact totals."""
    used = stored - excluded
    if used <= 0 or sent <= 0:
        return INCONCLUSIVE, "no segment is usable (each was a measurement fault)"
    if excluded > MAX_EXCLUDED_SHARE * stored:
        return INCONCLUSIVE, (
            f"{excluded} of {stored} segments are measurement faults (more than a quarter)"
        )
    ratio = (sent - forwarded) / sent
    if ratio <= goal:
        return PASS, f"loss ratio {ratio:.3e} <= goal {goal:g}"
    return FAIL, f"loss ratio {ratio:.3e} > goal {goal:g}"


def gapped(seconds: Sequence[Second]) -> list[Second]:
    """An excluded segment's seconds, each marked ``gap``."""
    return [{**s, "gap": True} for s in seconds]


def timeline(trials: Sequence[dict[str, Any]]) -> list[Second]:
    """Every stored segment's seconds in order (``Store.trials`` rows); an excluded
    segment's seconds are marked ``gap`` (they are not the SUT's)."""
    out: list[Second] = []
    for t in sorted(trials, key=lambda t: t["repetition"]):
        soak = (t.get("counters") or {}).get("soak", {})
        seconds: list[Second] = soak.get("per_second", [])
        out.extend(gapped(seconds) if t.get("excluded") else seconds)
    return out


def summary(trials: Sequence[dict[str, Any]], goal: float, planned: int) -> SeriesSummary:
    """A soak experiment's figures over its stored segments: exact totals of the used
    ones, the loss by place, the verdict, the events, the seconds."""
    used = [t for t in trials if not t.get("excluded")]
    sent = sum(int(t["sent"]) for t in used)
    fwd = sum(int(t["received"]) + int(t.get("sink_dropped") or 0) for t in used)
    lost_at: dict[str, int] = {}
    for t in used:
        for k, v in (t.get("loss_location") or {}).items():
            lost_at[k] = lost_at.get(k, 0) + int(v)
    v, why = verdict(len(trials), len(trials) - len(used), sent, fwd, goal)
    seconds = timeline(trials)
    return SeriesSummary(
        verdict=v,
        reason=why,
        goal=goal,
        segments_planned=planned,
        segments_stored=len(trials),
        segments_excluded=len(trials) - len(used),
        finished=len(trials) >= planned,
        sent=sent,
        forwarded=fwd,
        loss_ratio=(sent - fwd) / sent if sent else None,
        loss_location={k: v for k, v in sorted(lost_at.items()) if v},
        events=events(seconds, goal),
        seconds=len(seconds),
    )
