"""A campaign's stored cells as rows (PDR, NDR, verdict, worst Delta_UCL95 below PDR, CPU
use; an acceptance test's verdict, throughput with its CI, loss ratio, failed seconds and
CPU use), their comparison by factors (``analysis.compare``), and its text."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from netassay import methods as registry
from netassay.analysis import compare
from netassay.analysis.acceptance import fmt_bps, fmt_pct
from netassay.campaign.spec import params
from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.methods.base import Method
from netassay.store.db import Store
from netassay.units import fmt_latency, fmt_rate, fmt_us, parse_count


def has_campaigns(store: Store) -> bool:
    """True when the store holds experiments run as cells of a campaign."""
    return any(_tag(e) for e in store.experiments())


def campaign_names(store: Store) -> list[str]:
    """The campaigns whose cells the store holds, in the order their first cell was
    stored."""
    return list(dict.fromkeys(t["campaign"] for e in store.experiments() if (t := _tag(e))))


def _tag(exp: Any) -> dict[str, Any] | None:
    tag = exp.metadata.get("campaign")
    return tag if isinstance(tag, dict) and exp.metadata.get("role") == "cell" else None


def cpu_busy(trials: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per core, the mean busy share over the trials that carry CPU use."""
    per: dict[str, list[float]] = {}
    for t in trials:
        for core, row in (t.get("cpu") or {}).items():
            per.setdefault(core, []).append(float(row.get("busy", 0.0)))
    return {c: round(float(np.mean(v)), 4) for c, v in sorted(per.items())}


def rows(
    store: Store, campaign: str | None = None, cfg: AnalysisConfig | None = None
) -> list[dict[str, Any]]:
    """One row per cell experiment of ``campaign`` (the newest campaign when None): the
    cell's place and factor levels, and its figures as its method gives them."""
    exps = [e for e in store.experiments() if _tag(e)]
    if not exps:
        return []
    newest = _tag(exps[-1])
    assert newest is not None  # every experiment kept above has its tag
    name = campaign or newest["campaign"]
    cfg = cfg or AnalysisConfig()
    out = []
    for e in exps:
        tag = _tag(e)
        assert tag is not None
        if tag["campaign"] != name:
            continue
        trials = store.trials(e.id)
        row = {
            "campaign": name,
            "experiment_id": e.id,
            "key": e.key,
            "label": e.label,
            "kind": e.kind,
            "factors": tag["factors"],
            "block": tag["block"],
            "cell": tag["cell"],
            "position": tag["position"],
            "trials": len(trials),
            "cpu_busy": cpu_busy(trials),
        }
        m = registry.of_kind(e.kind)
        if m is not None:
            row.update(m.cell(store, e, cfg))
        out.append(row)
    return out


def _method(rs: list[dict[str, Any]], spec: dict[str, Any]) -> Method:
    """The method whose cells these are: the campaign file's, else their kind's."""
    if "method" in spec:
        name: str = spec["method"]
        return registry.method(name)
    kinds = {r["kind"] for r in rs}
    found = registry.of_kind(next(iter(kinds))) if len(kinds) == 1 else None
    return found or registry.method("sweep")


def level_number(method: str, factor: str, value: Any) -> float:
    p = params(method).get(factor)
    v = p.canonical(value) if p is not None else value
    return float(v) if isinstance(v, int | float) else parse_count(str(v))


def _orderer(spec: dict[str, Any], method: str) -> Callable[[str, Any], tuple[Any, ...]]:
    """Levels in order: numbers by value, others as the campaign file lists them."""
    listed = {f: [repr(v) for v in levels] for f, levels in spec.get("factors", {}).items()}
    ps = params(method)

    def order(factor: str, value: Any) -> tuple[Any, ...]:
        if factor in ps and ps[factor].ordinal:
            return (0, level_number(method, factor, value), "")
        names = listed.get(factor, [])
        return (1, names.index(repr(value)) if repr(value) in names else len(names), str(value))

    return order


def resolve_by(by: Sequence[str], factors: Sequence[str]) -> list[str]:
    """``--by`` names: a factor's own name, or a unique part of it ('cap' for sut_cap)."""
    out = []
    for name in by:
        hits = [f for f in factors if f == name] or [
            f for f in factors if name in f.replace("-", "_").split("_")
        ]
        if len(hits) != 1:
            raise UsageError(
                f"unknown factor '{name}'" if not hits else f"'{name}' is ambiguous",
                f"this campaign's factors: {', '.join(factors) or 'none'}",
                "give one of them to --by",
            )
        out.append(hits[0])
    return out


def comparison(store: Store, by: Sequence[str], campaign: str | None = None) -> dict[str, Any]:
    """The cells of a campaign grouped by ``by`` (default: every factor) and each factor's
    effect on PDR."""
    rs = rows(store, campaign)
    if not rs:
        raise UsageError(
            f"no campaign in {store.path}",
            "it has no campaign cells",
            "run 'netassay campaign run FILE --db ...' first",
        )
    have = {f for r in rs for f in r["factors"]}
    found = store.campaign(rs[0]["campaign"])
    spec: dict[str, Any] = found["spec"] if found is not None else {}
    order = [f for f in spec.get("factor_order", []) if f in have]
    factors = order + sorted(have - set(order))  # the file's order
    chosen = resolve_by(by, factors) if by else factors
    m = _method(rs, spec)
    level_order = _orderer(spec, m.name)
    ps = params(m.name)
    effects = []
    for f in chosen:
        levels = sorted(
            {repr(r["factors"][f]): r["factors"][f] for r in rs}.values(),
            key=functools.partial(level_order, f),
        )
        ordinal = f in ps and ps[f].ordinal
        number = lambda v, f=f: level_number(m.name, f, v)  # noqa: E731
        effects += [compare.effect(rs, f, levels, ordinal, number, x) for x in m.comparison.metrics]
    return {
        "campaign": rs[0]["campaign"],
        "method": m.name,
        "factors": factors,
        "by": chosen,
        "experiments": sorted(rs, key=lambda r: r["position"]),
        "groups": compare.groups(
            rs, chosen, level_order, m.comparison.figures, lowest_first=m.comparison.lowest_first
        ),
        "effects": effects,
    }


def _pps(v: float | None) -> str:
    return fmt_rate(v) if v is not None else "-"


def _num(v: float | None, fmt: str = ".3g") -> str:
    return "-" if v is None else format(v, fmt)


def _cpu(c: dict[str, float]) -> str:
    return " ".join(f"{k}:{v:.0%}" for k, v in c.items()) or "-"


def text(result: dict[str, Any]) -> list[str]:
    """The comparison for people: groups ranked, then each factor's effect and its test."""
    by = result["by"]
    lines = [
        f"campaign {result['campaign']}: {len(result['experiments'])} experiments, "
        f"by {', '.join(by)}",
        "",
    ]
    for g in result["groups"]:
        lv = " ".join(f"{k}={v}" for k, v in g["levels"].items())
        group_text = registry.method(result["method"]).comparison.group_text
        if group_text is not None:
            lines.append(f"#{g['rank']} {lv}: n={g['experiments']} {group_text(g)}")
            continue
        p = g["pdr_pps"]
        spread = f" [{_pps(p['min'])}..{_pps(p['max'])}]" if p["n"] > 1 else ""
        verdicts = ", ".join(f"{k} {n}" for k, n in g["verdicts"].items())
        lines.append(
            f"#{g['rank']} {lv}: n={g['experiments']} PDR {bound_text(p)}{spread} "
            f"NDR {bound_text(g['ndr_pps'])}; {verdicts}; worst dUCL95 below PDR "
            f"{_num(g['worst_delta_ucl95_below_pdr'])}; CPU busy {_cpu(g['cpu_busy'])}" + _p99(g)
        )
    if any(g.get(f, {}).get("at_least") for g in result["groups"] for f in compare.LAB_FIGURES):
        lines.append(AT_LEAST)
    for e in result["effects"]:
        test = e["test"] or "one level: nothing to compare"
        what = registry.metric(e.get("metric", compare.PDR))[0]
        lines += ["", f"effect of {e['factor']} on {what} ({test}; {e['experiments']} experiments)"]
        if "trend" in e and e["trend"]["tau_b"] is not None:
            t = e["trend"]
            lines.append(f"  Kendall tau-b = {t['tau_b']:+.3f} (p = {t['p']:.3g}, n = {t['n']})")
        for c in e["comparisons"]:
            n = f"n = {c['n_pairs']} pairs" if c["paired"] else f"n = {c['n_a']} + {c['n_b']}"
            p = f"p = {c['p']:.3g}" if c["p"] is not None else "no p-value"
            lines.append(
                f"  {c['level']} vs {c['against']}: {c['test']} {p} ({n}); Cliff's delta "
                f"{_num(c['cliffs_delta'], '+.2f')} ({c['effect']}); Hodges-Lehmann shift "
                f"{shift_text(e.get('metric', compare.PDR), c)}" + bound_clause(c)
            )
    return lines


def bound_clause(c: dict[str, Any]) -> str:
    """What a comparison's figures are when some of its values are lower bounds."""
    b = c.get("bound")
    return "" if b is None else "; " + compare.BOUNDS[b].format(a=c["against"], b=c["level"])


AT_LEAST = (
    ">= : at least this: the highest load tried met the goal in a cell of the group, where "
    "its bound lies was not found (the generator's reach, or --max-load, set it); a "
    "comparison's shift marked '>= ' or '<= ' is then at least or at most that (one "
    "level's values include such bounds), marked '? ' not known (both levels' do); a "
    "latency at such a PDR is at that bound (in the figures: hatched, 'at >=')"
)


def bound_text(summary: dict[str, Any]) -> str:
    """A summarized PDR or NDR, marked '>= ' when it is a lower bound (``AC.groups``)."""
    return (">= " if summary.get("at_least") else "") + _pps(summary["median"])


def _p99(g: dict[str, Any]) -> str:
    """A search group's one-way latency at its PDR (search --latency), when it has one."""
    p99 = (g.get(compare.P99_AT_PDR) or {}).get("median")
    if p99 is None:
        return ""
    at = "its lower bound" if g.get("pdr_pps", {}).get("at_least") else "PDR"
    return f"; p99 latency at {at} {fmt_latency(round(p99))}"


def _bps(v: float | None) -> str:
    return "-" if v is None else fmt_bps(v)


def _ratio(v: float | None) -> str:
    return fmt_pct(v)


def shift_text(metric: str, c: dict[str, Any]) -> str:
    """A comparison's Hodges-Lehmann shift, signed, in its metric's unit."""
    v = c.get(compare.shift_key(metric))
    if v is None:
        return "-"
    mark = {"at_least": ">= ", "at_most": "<= ", "unknown": "? "}.get(c.get("bound") or "", "")
    return mark + _shift(metric, v)


def _shift(metric: str, v: float) -> str:
    sign = "+" if v >= 0 else "-"
    if metric == "throughput_bps":
        return sign + _bps(abs(v))
    if metric == "loss_ratio" or metric.startswith("share_"):  # a share (batching's)
        return sign + _ratio(abs(v))
    if metric.endswith("_ns"):
        return sign + fmt_us(abs(v))
    if metric.endswith("_s"):  # a time (recovery, buffer, blocked)
        return f"{sign}{abs(v) * 1e3:.3g} ms"
    if metric.endswith("_frames"):  # a count of frames (a burst)
        return f"{sign}{abs(v):,.0f} frames"
    return _signed_pps(v)


def _signed_pps(v: float | None) -> str:
    if v is None:
        return "-"
    return ("+" if v >= 0 else "-") + fmt_rate(abs(v))
