"""A store's results as series of one configuration each, judged (``analysis.trend``),
and their text.

A configuration is what an experiment was asked to measure: its kind, its effective
config (the testbed's name aside) and the settings its metadata records (class,
environment, pinning, ring, ground truths ...); the environment (kernel, CPU) and
netassay's version are not part of it, so that a series can run across kernels and
releases. Each experiment's figure and verdict are its method's (``Method.cell``, found
through the registry), as a campaign's comparison reads them: trials that are
measurement faults never count. The points are in time order, or in the order of a
factor's value (``--by kernel``: the kernel's version) and then time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from netassay import methods as registry
from netassay.analysis import trend as analysis_trend
from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.store.db import Experiment, Store
from netassay.units import fmt_rate

TIME = "time"
NAMING = ("testbed_name",)  # config keys that name a testbed, not configure it
# metadata that is the environment or where a result came from, not its configuration
NOT_CONFIGURATION = ("kernel", "folder", "log", "files", "source", "role", "method")


@dataclass(frozen=True)
class Series:
    """One configuration's points, judged; its figure's name, scale and axis label."""

    id: str
    method: str
    kind: str
    configuration: dict[str, Any]
    label: str  # the newest experiment's label
    by: str
    name: str
    scale: float
    axis: str
    trend: analysis_trend.Trend

    def fmt(self, v: float | None) -> str:
        """A value of the figure in its unit (``203.9 kpps``, ``41.2 us``)."""
        if v is None:
            return "-"
        if self.trend.metric.endswith("_pps"):
            return fmt_rate(v)
        unit = self.axis.rpartition("(")[2].rstrip(")") if "(" in self.axis else ""
        return f"{v / self.scale:.4g} {unit}".strip()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "method": self.method, "kind": self.kind, "label": self.label,
            "configuration": self.configuration, "by": self.by, "metric_name": self.name,
            **self.trend.as_dict(),
        }  # fmt: skip


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def configuration(exp: Experiment, by: str = TIME) -> dict[str, Any]:
    """What ``exp`` was asked to measure, without the factor ``by`` (its x axis)."""
    config = {k: v for k, v in exp.config.items() if k not in NAMING and k != by}
    if isinstance(config.get("testbed"), dict):
        config["testbed"] = {k: v for k, v in config["testbed"].items() if k != by}
    meta = {
        k: v for k, v in exp.metadata.items()
        if _scalar(v) and k not in NOT_CONFIGURATION and k != by
    }  # fmt: skip
    return {"kind": exp.kind, "config": config, "settings": meta}


def factor(exp: Experiment, by: str) -> Any:
    """The value of ``by`` for ``exp``: its time, netassay's version, the kernel (the
    environment's, else an imported result's), else a recorded setting or factor."""
    if by == TIME:
        return exp.created_utc
    if by in ("version", "tool_version"):
        return exp.tool_version
    tag = exp.metadata.get("campaign")
    places = [
        exp.environment, exp.metadata, exp.config, exp.config.get("testbed") or {},
        (tag.get("factors") or {}) if isinstance(tag, dict) else {},
    ]  # fmt: skip
    return next((p[by] for p in places if isinstance(p, dict) and p.get(by) is not None), None)


def metric_of(method: Any, metric: str | None) -> str | None:
    """The figure a series of ``method`` follows: the one ``metric`` names, else the
    method's first compared figure (None: the method has no such figure)."""
    comp = method.comparison
    if metric is None:
        return str(comp.metrics[0])
    return analysis_trend.metric_key(metric, [*comp.names, *comp.figures])


def known_metrics(st: Store) -> list[str]:
    """The ``--metric`` names the methods of the store's experiments follow."""
    names: list[str] = []
    for kind in dict.fromkeys(e.kind for e in st.experiments()):
        m = registry.of_kind(kind)
        if m is not None:
            names += [
                analysis_trend.short_name(k) for k in [*m.comparison.names, *m.comparison.figures]
            ]
    return list(dict.fromkeys(names))


def series(
    st: Store, metric: str | None = None, by: str = TIME, include_all: bool = False,
    cfg: AnalysisConfig | None = None, min_points: int = analysis_trend.MIN_POINTS,
) -> list[Series]:  # fmt: skip
    """The store's series, each judged, in the order of their first experiment."""
    cfg = cfg or AnalysisConfig()
    found: dict[str, tuple[Any, str, dict[str, Any], list[Experiment]]] = {}
    for exp in st.experiments():
        m = registry.of_kind(exp.kind)
        key = metric_of(m, metric) if m is not None else None
        if m is None or key is None:
            continue
        conf = configuration(exp, by)
        digest = hashlib.sha256(json.dumps([m.name, conf], sort_keys=True, default=str).encode())
        found.setdefault(digest.hexdigest()[:8], (m, key, conf, []))[3].append(exp)
    if not found:
        _nothing(st, metric)
    if by != TIME and all(factor(e, by) is None for *_, exps in found.values() for e in exps):
        raise UsageError(
            f"no experiment in {st.path} records '{by}'",
            "--by takes kernel, version, or a setting or factor the experiments record",
            "e.g. --by kernel",
        )
    out = []
    for sid, (m, key, conf, exps) in found.items():
        exps.sort(key=lambda e: (analysis_trend.natural(factor(e, by)), e.created_utc, e.id))
        points = [_point(st, m, e, key, by, cfg) for e in exps]
        name, scale, axis = registry.metric(key)
        judged = analysis_trend.trend(points, key, include_all, min_points)
        out.append(Series(sid, m.name, exps[0].kind, conf, exps[-1].label, by, name, scale,
                          axis, judged))  # fmt: skip
    return out


def _point(
    st: Store, m: Any, exp: Experiment, key: str, by: str, cfg: AnalysisConfig
) -> analysis_trend.Point:
    figures = m.cell(st, exp, cfg)
    value = figures.get(key)
    x = factor(exp, by)
    return analysis_trend.Point(
        x="-" if x is None else str(x), value=None if value is None else float(value),
        experiment_id=exp.id, label=exp.label, utc=exp.created_utc,
        verdict=figures.get("verdict"),
    )  # fmt: skip


def _nothing(st: Store, metric: str | None) -> None:
    """No series: the store holds no experiment, or none of the figure asked for."""
    if next(iter(st.experiments()), None) is None:
        raise UsageError(
            f"{st.path}: no experiment", "the store holds no results",
            "measure with --db first (sweep, search, flood, rtt, accept, soak)",
        )  # fmt: skip
    raise UsageError(
        f"no --metric '{metric}' in {st.path}",
        f"its experiments' figures: {', '.join(known_metrics(st))}",
        "give one of them to --metric",
    )


# -- in words ----------------------------------------------------------------------------
def when(p: analysis_trend.Point, by: str) -> str:
    """Where a point sits: its time (to the second) or the factor's value."""
    return p.x[:19].replace("T", " ") if by == TIME else f"{by} {p.x}"


def settings_text(conf: dict[str, Any]) -> str:
    """A configuration in one line: its recorded settings, then its config's own."""
    said = {k: v for k, v in conf["settings"].items() if v is not None}
    for k, v in conf["config"].items():
        if _scalar(v) and v is not None and k not in said:
            said[k] = v
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in said.items())


def text(s: Series, threshold: float = analysis_trend.THRESHOLD) -> list[str]:
    """A series for people: its configuration, points, groups (average and spread), each
    change with where it is and its size, and the newest group's state."""
    t = s.trend
    head = f"series {s.id}: {s.method} {s.name} of '{s.label}', by {s.by}"
    used = sum(p.used for p in t.points)
    values = " ".join(s.fmt(p.value) + (f"({p.mark})" if p.mark else "") for p in t.points)
    lines = [head, f"  configuration: {s.kind}: {settings_text(s.configuration)}",
             f"  {len(t.points)} point(s), {used} used: {values}"]  # fmt: skip
    if not t.judged:
        return [*lines, f"  {t.note}"]
    for n, g in enumerate(t.groups, 1):
        first, last = t.points[g.first], t.points[g.last]
        spread = f"{s.fmt(g.stdev)} ({g.stdev / g.average:.1%})" if g.average else s.fmt(g.stdev)
        line = (
            f"  group {n}: points {g.first + 1}-{g.last + 1} ({when(first, s.by)} .. "
            f"{when(last, s.by)}), {g.points} used: average {s.fmt(g.average)}, spread {spread}"
        )
        if g.change in ("regression", "progression"):
            line += (
                f"; {g.change} {g.size()} at point {g.first + 1} "
                f"(experiment {first.experiment_id}, {when(first, s.by)})"
            )
        lines.append(line)
    left = [p for p in t.points if not p.used]
    if left:
        lines.append("  left out: " + ", ".join(
            f"point {t.points.index(p) + 1} (experiment {p.experiment_id}, {p.mark})" for p in left
        ))  # fmt: skip
    return [*lines, "  newest group: " + newest_text(t, threshold)]


def newest_text(t: analysis_trend.Trend, threshold: float) -> str:
    g = t.newest
    if g is None:
        return t.note
    if g.change == "first":
        return "no change"
    said = f"{g.change} {g.size()} from the group before"
    if g.change == "regression":
        beyond = "beyond" if t.regression_beyond(threshold) else "within"
        said += f" ({beyond} the {threshold:.1%} threshold)"
    return said


def as_json(
    found: list[Series], db: Any, metric: str | None, by: str, threshold: float, include_all: bool
) -> dict[str, Any]:
    """The trend as one object: every series, and those whose newest group is a
    regression beyond ``threshold`` (which series, by how much)."""
    return {
        "db": str(db), "metric": metric, "by": by, "threshold": threshold, "all": include_all,
        "series": [s.as_dict() for s in found],
        "regressions": [
            {"series": s.id, "label": s.label, "method": s.method, "metric": s.trend.metric,
             "relative": s.trend.newest.relative if s.trend.newest else None,
             "worse_by": s.trend.worse_by()}
            for s in found if s.trend.regression_beyond(threshold)
        ],
    }  # fmt: skip
