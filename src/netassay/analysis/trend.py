"""Regressions and progressions of one configuration over time (pure).

A series is the stored results of one configuration (method, factors, testbed settings;
the kernel and netassay's version may vary) in order: by time, or by a stated factor
such as the kernel's version. Each point is one experiment's figure (a PDR, an MRR, an
RTT p50 ...). Change detection is CSIT's own, the ``jumpavg`` package: it splits the
points into groups of one average each (the split of fewest bits, each group a
Gaussian population) and marks each group against the one before: a regression or a
progression, sized by the relative change of the average.

Only trustworthy points feed the detection: a point whose verdict is BAD or
INCONCLUSIVE (its PDR is not the onset of saturation, or the range never reached it) is
kept, drawn and marked, but left out of the groups unless ``include_all``. A point with
no figure is kept and marked too. jumpavg says "regression" when an average falls; for
a figure where lower is better (a round-trip time, a loss ratio) a rise is the
regression, so its marks are turned round.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import jumpavg

UNTRUSTED = ("BAD", "INCONCLUSIVE")  # verdicts whose figure is drawn but not judged
MIN_POINTS = 3  # fewer used points: too short to judge
THRESHOLD = 0.05  # --fail-on-regression: the newest group worse by this share or more
HIGHER_BETTER = ("pps", "bps")  # figures in these units are better when higher
UNITS = ("pps", "bps", "ns", "ratio")


def higher_is_better(metric: str) -> bool:
    """A rate (``*_pps``, ``*_bps``) is better higher; a time or a ratio lower."""
    return metric.rsplit("_", 1)[-1] in HIGHER_BETTER


def short_name(metric: str) -> str:
    """A figure's name as ``--metric`` takes it: its key without its unit (pdr_pps: pdr,
    rtt_p50_ns: rtt_p50, throughput_bps: throughput, loss_ratio: loss)."""
    head, _, unit = metric.rpartition("_")
    return head if head and unit in UNITS else metric


def metric_key(name: str, keys: Sequence[str]) -> str | None:
    """The figure among ``keys`` that ``--metric name`` names (its key or short name)."""
    return next((k for k in keys if name in (k, short_name(k))), None)


def natural(value: Any) -> tuple[Any, ...]:
    """A sort key that puts versions and numbers in order: 5.6 < 5.13 < 6.8; None last."""
    if value is None:
        return (1,)
    if isinstance(value, int | float):
        return (0, ((0, float(value), ""),))
    parts = re.findall(r"\d+|\D+", str(value))
    return (0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts))


@dataclass(frozen=True)
class Point:
    """One experiment in a series: where it sits (``x``: its time or the factor's
    value), its figure, its verdict, and whether the detection uses it."""

    x: str
    value: float | None
    experiment_id: int
    label: str = ""
    utc: str = ""
    verdict: str | None = None
    used: bool = True
    mark: str = ""  # why it is left out ("" when used; "BAD", "no value" ...)


@dataclass(frozen=True)
class Group:
    """A run of points of one average (indices into the series' points, inclusive)."""

    first: int
    last: int
    points: int  # used points in it
    average: float
    stdev: float
    change: str  # "first", "regression", "progression" or "normal"
    relative: float | None  # the change of the average from the group before (None: from 0)

    def size(self) -> str:
        """The change in words: ``-24.9%``, or ``from 0`` (no relative size)."""
        if self.change == "first":
            return ""
        return "from 0" if self.relative is None else f"{self.relative:+.1%}"


@dataclass(frozen=True)
class Trend:
    """A series judged: its points, groups and the state of its newest group."""

    metric: str
    higher_is_better: bool
    points: list[Point]
    groups: list[Group] = field(default_factory=list)
    note: str = ""  # why it is not judged (too short), "" when it is

    @property
    def judged(self) -> bool:
        return bool(self.groups)

    @property
    def changes(self) -> list[Group]:
        return [g for g in self.groups if g.change in ("regression", "progression")]

    @property
    def newest(self) -> Group | None:
        return self.groups[-1] if self.groups else None

    def worse_by(self) -> float | None:
        """How much worse the newest group is than the one before: a share, 0 when it is
        not a regression, None when it has no relative size (a rise from 0)."""
        g = self.newest
        if g is None or g.change != "regression":
            return 0.0
        return None if g.relative is None else abs(g.relative)

    def regression_beyond(self, threshold: float = THRESHOLD) -> bool:
        """The newest group is a regression of ``threshold`` or more (a rise from 0 is
        beyond any)."""
        g, worse = self.newest, self.worse_by()
        return g is not None and g.change == "regression" and (worse is None or worse >= threshold)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "higher_is_better": self.higher_is_better,
            "judged": self.judged,
            "note": self.note,
            "points": [asdict(p) for p in self.points],
            "groups": [asdict(g) for g in self.groups],
            "changes": [
                {
                    **asdict(g),
                    "at": g.first,
                    "x": self.points[g.first].x,
                    "experiment_id": self.points[g.first].experiment_id,
                }
                for g in self.changes
            ],
            "newest": None if self.newest is None else self.newest.change,
            "worse_by": self.worse_by(),
        }


def marked(point: Point, include_all: bool) -> Point:
    """The point with its use in the detection decided: no figure, never; BAD or
    INCONCLUSIVE, only with ``include_all``."""
    if point.value is None or not math.isfinite(point.value):
        return Point(**{**asdict(point), "value": None, "used": False, "mark": "no value"})
    if point.verdict in UNTRUSTED:
        return Point(**{**asdict(point), "used": include_all, "mark": point.verdict or ""})
    return Point(**{**asdict(point), "used": True, "mark": ""})


def trend(
    points: Sequence[Point], metric: str, include_all: bool = False, min_points: int = MIN_POINTS
) -> Trend:
    """The series ``points`` (in order) judged with jumpavg on the points it uses."""
    pts = [marked(p, include_all) for p in points]
    better_high = higher_is_better(metric)
    used = [i for i, p in enumerate(pts) if p.used]
    if len(used) < min_points:
        note = f"too short to judge: {len(used)} trustworthy point(s), {min_points} needed"
        return Trend(metric, better_high, pts, note=note)
    # a used point has a value (``marked`` leaves one without it out)
    values = [float(v) for i in used if (v := pts[i].value) is not None]
    if max(values) <= 0:  # all zero (nothing lost): one group, which jumpavg cannot size
        flat = Group(used[0], used[-1], len(used), 0.0, 0.0, "first", None)
        return Trend(metric, better_high, pts, [flat])
    return Trend(metric, better_high, pts, groups(values, used, better_high))


def groups(values: Sequence[float], where: Sequence[int], higher_better: bool) -> list[Group]:
    """jumpavg's groups of ``values``, placed at the indices ``where`` they came from;
    each marked against the group before (a fall of a rate, a rise of a time: a
    regression)."""
    found = jumpavg.classify(list(values))
    out: list[Group] = []
    start = 0
    for n, g in enumerate(found):
        size = len(g.run_list)
        avg, prev = g.stats.avg, out[-1].average if out else None
        rel = (avg - prev) / prev if prev else None
        change = "first" if n == 0 else g.comment
        if not higher_better and change in ("regression", "progression"):
            change = "progression" if change == "regression" else "regression"
        out.append(
            Group(where[start], where[start + size - 1], size, avg, g.stats.stdev, change, rel)
        )
        start += size
    return out
