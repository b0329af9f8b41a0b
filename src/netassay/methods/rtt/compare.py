"""Compare RTT configurations from the store: runs grouped by factors, then tested.

A configuration is the set of rtt experiments that share the values of the ``--by``
factors (by default every factor that differs between the stored experiments). Its
runs (measurement faults left out) are the unit: for each segment, the per-run median
(or another per-run statistic) is summarized over runs with a bootstrap CI, and two
configurations are compared with Mann-Whitney U and Cliff's delta (independent runs),
or with the Wilcoxon signed-rank test when ``paired`` (runs paired by position, blocks
measured one after the other). A trend against the number of background loads is
Kendall's tau-b over the runs of configurations that differ only in that count. Within
each configuration, the sender side (RTT overhead) and the responder side (response
time) of the same runs are compared paired by run (Wilcoxon signed-rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from netassay.analysis import effects
from netassay.analysis.effects import OverRuns
from netassay.errors import UsageError
from netassay.hist import Figure, Hist, figure
from netassay.methods.rtt import store as rtt_store
from netassay.store.db import Store

# factor name on the command line -> key in the experiment's config
FACTORS = {
    "path": "path", "probe": "probe", "rate": "rate_pps", "size": "size_bytes",
    "load": "load", "load-type": "load_type", "load-count": "load_count",
    "load-location": "load_location", "responder": "responder",
    "delay": "responder_delay_ns", "capture": "capture",
}  # fmt: skip
STATS: dict[str, Figure] = {"p50": "p50_ns", "p90": "p90_ns", "p99": "p99_ns",
                            "p999": "p999_ns", "mean": "mean_ns", "min": "min_ns",
                            "max": "max_ns"}  # fmt: skip
DEFAULT_SEGMENTS = ("rtt", "overhead", "wire", "response", "latency")


@dataclass
class Config:
    """One configuration: its factor values and its usable runs."""

    key: tuple[Any, ...]
    factors: dict[str, Any]
    experiments: list[int] = field(default_factory=list)
    runs: list[rtt_store.StoredRun] = field(default_factory=list)
    excluded: int = 0

    @property
    def label(self) -> str:
        return " ".join(f"{k}={_fmt(v)}" for k, v in self.factors.items()) or "all"

    def values(self, segment: str, stat: str) -> list[float]:
        """The per-run statistic of one segment, over this configuration's runs."""
        out = []
        for r in self.runs:
            v = figure(r.summary.get("segments", {}).get(segment), STATS[stat])
            if v is not None:
                out.append(v)
        return out

    def pairs(self, seg_a: str, seg_b: str, stat: str) -> tuple[list[float], list[float]]:
        """The per-run statistic of two segments, over the runs that have both: the same
        runs seen at two pairs of capture points (paired data)."""
        a, b = [], []
        for r in self.runs:
            segs = r.summary.get("segments", {})
            x, y = figure(segs.get(seg_a), STATS[stat]), figure(segs.get(seg_b), STATS[stat])
            if x is not None and y is not None:
                a.append(x)
                b.append(y)
        return a, b

    def merged(self, segment: str) -> Hist:
        """Every probe of every run of one segment, in one histogram (for a CDF)."""
        h = Hist()
        for r in self.runs:
            part = r.hists().get(segment)
            if part is not None:
                h.merge(part)
        return h


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def factor_keys(by: Sequence[str]) -> list[str]:
    bad = [b for b in by if b not in FACTORS]
    if bad:
        raise UsageError(
            f"unknown factor '{bad[0]}'", f"known: {', '.join(FACTORS)}", "e.g. --by path"
        )
    return [FACTORS[b] for b in by]


def configurations(store: Store, by: Sequence[str]) -> list[Config]:
    """The stored rtt runs grouped into configurations by the factors ``by`` (default:
    the factors whose values differ between experiments)."""
    exps = list(rtt_store.rtt_experiments(store))
    if not exps:
        raise UsageError(
            f"{store.path}: no rtt experiment", "the store holds no 'netassay rtt' runs",
            "measure with 'netassay rtt --db FILE' first",
        )  # fmt: skip
    keys = factor_keys(by) if by else _differing(exps)
    groups: dict[tuple[Any, ...], Config] = {}
    for exp in exps:
        values = tuple(exp.config.get(k) for k in keys)
        cfg = groups.setdefault(values, Config(values, dict(zip(keys, values, strict=True))))
        cfg.experiments.append(exp.id)
        for run in rtt_store.runs(store, exp.id):
            if run.excluded:
                cfg.excluded += 1
            else:
                cfg.runs.append(run)
    return sorted(
        groups.values(), key=lambda c: tuple(_sortable(k, v) for k, v in c.factors.items())
    )


def _sortable(key: str, v: Any) -> tuple[Any, ...]:
    """Numbers in order, no load first then by type, location and count."""
    if key == "load":
        if v in (None, "none"):
            return (0,)
        typ, _, rest = str(v).partition(":")
        count, _, where = rest.partition("@")
        return (1, typ, where, int(count) if count.isdigit() else 0)
    return (0, v) if isinstance(v, int | float) else (1, str(v))


def _differing(exps: Sequence[Any]) -> list[str]:
    keys = []
    for k in FACTORS.values():
        if len({repr(e.config.get(k)) for e in exps}) > 1:
            keys.append(k)
    return keys


@dataclass(frozen=True)
class ConfigSummary:
    """One configuration in a comparison: the per-run statistic of each segment over its
    runs (median, bootstrap CI), as shown and written (``to_json``: a segment's summary
    under its own name beside the configuration's)."""

    configuration: str
    factors: dict[str, Any]  # the experiments' config values it groups by (open)
    runs: int
    excluded: int
    segments: dict[str, OverRuns]

    def to_json(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "factors": self.factors,
                "runs": self.runs, "excluded": self.excluded, **self.segments}  # fmt: skip


@dataclass(frozen=True)
class Pairwise:
    """One segment of a configuration (``a``) against the baseline (``b``): the test's
    figures (``analysis.effects``: Mann-Whitney U or Wilcoxon signed-rank, whose keys
    differ), written beside the segment and the two labels."""

    segment: str
    a: str
    b: str
    test: effects.Wilcoxon | effects.MannWhitney

    def to_json(self) -> dict[str, Any]:
        return {"segment": self.segment, "a": self.a, "b": self.b, **self.test}


@dataclass(frozen=True)
class Trend:
    """Kendall's tau-b of a segment against the number of ``load`` loads, over the
    configurations equal in the factors ``with_`` (``analysis.effects.kendall_trend``)."""

    segment: str
    load: str
    with_: dict[str, Any]
    test: effects.KendallTrend

    def to_json(self) -> dict[str, Any]:
        return {"segment": self.segment, "load": self.load, "with": self.with_, **self.test}


@dataclass(frozen=True)
class Sides:
    """A configuration's sender side against its responder side, paired by run (the
    Wilcoxon signed-rank test's figures)."""

    configuration: str
    a: str
    b: str
    test: effects.Wilcoxon

    def to_json(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "a": self.a, "b": self.b, **self.test}


@dataclass(frozen=True)
class RttComparison:
    """A store's rtt configurations compared (``comparison``): per configuration the
    statistic over runs, each against the first, the trends and the two sides; as
    ``assess``, ``compare`` and the page show it and write it (``to_json``)."""

    statistic: str
    paired: bool
    configurations: list[ConfigSummary]
    pairwise: list[Pairwise]
    trends: list[Trend]
    sides: list[Sides]

    def to_json(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic, "paired": self.paired,
            "configurations": [c.to_json() for c in self.configurations],
            "pairwise": [t.to_json() for t in self.pairwise],
            "trends": [t.to_json() for t in self.trends],
            "sides": [t.to_json() for t in self.sides],
        }  # fmt: skip


def summary_table(
    configs: Sequence[Config], segments: Sequence[str], stat: str
) -> list[ConfigSummary]:
    """Per configuration and segment: the per-run statistic over runs (median, CI)."""
    return [
        ConfigSummary(c.label, c.factors, len(c.runs), c.excluded,
                      {seg: effects.over_runs(c.values(seg, stat)) for seg in segments})
        for c in configs
    ]  # fmt: skip


def pairwise(
    configs: Sequence[Config], segments: Sequence[str], stat: str, *, paired: bool = False
) -> list[Pairwise]:
    """Each configuration against the first (the baseline), per segment."""
    if len(configs) < 2:
        return []
    base, out = configs[0], []
    for other in configs[1:]:
        for seg in segments:
            a, b = other.values(seg, stat), base.values(seg, stat)
            test = effects.wilcoxon_paired(a, b) if paired else effects.mann_whitney(a, b)
            out.append(Pairwise(seg, other.label, base.label, test))
    return out


def sides(configs: Sequence[Config], stat: str) -> list[Sides]:
    """Per configuration, the sender side against the responder side of the path: the
    RTT overhead (sender endpoint <-> its server's uplink) and the response time
    (responder server's uplink -> endpoint -> uplink) of the same runs, paired by run:
    Wilcoxon signed-rank, with the median of the differences (overhead - response)."""
    out = []
    for c in configs:
        a, b = c.pairs("overhead", "response", stat)
        if a:
            out.append(Sides(c.label, "overhead", "response", effects.wilcoxon_paired(a, b)))
    return out


def trends(configs: Sequence[Config], segments: Sequence[str], stat: str) -> list[Trend]:
    """Kendall tau-b of a segment's per-run statistic against the number of background
    loads, over configurations equal in everything else (load 'none' counts as 0 of
    every type and location)."""
    families: dict[tuple[Any, ...], list[Config]] = {}
    for c in configs:
        if "load" not in c.factors and "load_count" not in c.factors:
            continue
        rest = tuple((k, v) for k, v in c.factors.items() if not k.startswith("load"))
        families.setdefault(rest, []).append(c)
    out = []
    for rest, members in families.items():
        kinds = {kind for c in members if (kind := _kind(c)) is not None}
        for kind in sorted(kinds):
            fam = [c for c in members if _kind(c) in (kind, None)]
            for seg in segments:
                xs, ys = [], []
                for c in fam:
                    for v in c.values(seg, stat):
                        xs.append(_count(c))
                        ys.append(v)
                t = effects.kendall_trend(xs, ys)
                if t["tau_b"] is not None:
                    out.append(Trend(seg, kind, dict(rest), t))
    return out


def _kind(c: Config) -> str | None:
    label = str(c.factors.get("load", ""))
    if not label or label == "none":
        return None
    typ, _, rest = label.partition(":")
    return f"{typ}@{rest.partition('@')[2]}"


def _count(c: Config) -> int:
    label = str(c.factors.get("load", "none"))
    if label == "none":
        return 0
    return int(label.split(":")[1].split("@")[0])


def comparison(
    store: Store,
    by: Sequence[str],
    segments: Sequence[str] | None,
    stat: str = "p50",
    *,
    paired: bool = False,
) -> tuple[list[Config], list[str], RttComparison]:
    """The configurations of a store's rtt runs grouped ``by`` factors, the segments
    compared (``None``: the default ones that were measured) and the result: per
    configuration the statistic over runs, pairwise tests against the first, trends.
    Raises UsageError for a segment that was not stored."""
    configs = configurations(store, by)
    known = {k for c in configs for r in c.runs for k in r.summary.get("segments", {})}
    if segments:
        chosen = list(segments)
        bad = [x for x in chosen if x not in known]
        if bad:
            raise UsageError(f"unknown segment '{bad[0]}'", f"stored: {', '.join(sorted(known))}",
                             "e.g. --segment rtt")  # fmt: skip
    else:  # the default ones that were measured (not all are, --no-capture)
        chosen = [x for x in DEFAULT_SEGMENTS if x in known] or sorted(known)
    result = RttComparison(
        stat, paired, summary_table(configs, chosen, stat),
        pairwise(configs, chosen, stat, paired=paired), trends(configs, chosen, stat),
        sides(configs, stat),
    )  # fmt: skip
    return configs, chosen, result
