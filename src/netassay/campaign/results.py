"""A campaign's stored cells as rows (PDR, NDR, verdict, worst Delta_UCL95 below PDR, CPU
use; an acceptance test's verdict, throughput with its CI, loss ratio, failed seconds and
CPU use), their comparison by factors (``analysis.compare``), and its text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from netassay.analysis import compare as AC
from netassay.campaign.spec import PARAMS
from netassay.config import AnalysisConfig
from netassay.errors import UsageError
from netassay.methods.sweep.analyse import assess_experiment
from netassay.store.db import Store
from netassay.units import fmt_rate, parse_count


def has_campaigns(store: Store) -> bool:
    """True when the store holds experiments run as cells of a campaign."""
    return any(_tag(e) for e in store.experiments())


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
) -> list[dict]:
    """One row per cell experiment of ``campaign`` (the newest campaign when None)."""
    from netassay.methods.search.view import stored_outcome

    exps = [e for e in store.experiments() if _tag(e)]
    if not exps:
        return []
    name = campaign or _tag(exps[-1])["campaign"]  # type: ignore[index]
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
        if e.kind == "accept":
            row.update(_accept_row(store, e))
        elif e.kind == "rtt":
            row.update(_rtt_row(store, e))
        elif e.kind == "search":
            o = stored_outcome(store, e)
            bound = {g.goal.loss_ratio: g.lower_pps for g in o.goals}
            pdr = [v for k, v in sorted(bound.items()) if k > 0]
            verify = store.find_experiment(f"{e.key}-2")  # its verify sweep, if it ran one
            checked = assess_experiment(store, verify, cfg) if verify else None
            row.update(
                verdict=checked.verdict if checked else None,
                pdr_pps=pdr[0] if pdr else None,
                ndr_pps=bound.get(0.0),
                worst_delta_ucl95_below_pdr=None,
            )
        else:
            a = assess_experiment(store, e, cfg)
            row.update(
                verdict=a.verdict if a else None,
                pdr_pps=a.pdr.rate_pps if a else None,
                ndr_pps=a.ndr.rate_pps if a else None,
                worst_delta_ucl95_below_pdr=a.worst_delta_below_pdr() if a else None,
            )
        out.append(row)
    return out


ACCEPT_FIGURES = ("throughput_bps", "loss_ratio", "failed_seconds")
ACCEPT_EFFECTS = ("throughput_bps", "loss_ratio")  # each factor's effect on both


def _accept_row(store: Store, e: Any) -> dict[str, Any]:
    """An acceptance cell: its verdict and figures as ``assess`` gives them, CPU busy per
    core as a share (like a sweep's)."""
    from netassay.methods.accept.store import load_accept_test
    from netassay.methods.accept.view import summary

    s = summary(load_accept_test(store, e))
    return {
        "verdict": s["verdict"],
        "reason": s["reason"],
        "contract_bps": s["contract_bps"],
        "layer": s["layer"],
        "trials": s["runs"] + s["ramp_steps"],
        "throughput_bps": s["throughput_bps"],
        "throughput_ci95_bps": s["throughput_ci95_bps"],
        "loss_ratio": s["loss_ratio"],
        "failed_seconds": len(s["failed_seconds"]),
        "graded_seconds": s["graded_seconds"],
        "cpu_busy": {c: round(v / 100, 4) for c, v in s["cpu_busy_pct"].items()},
    }


RTT_FIGURES = ("rtt_p50_ns", "rtt_p99_ns", "loss_ratio")
RTT_EFFECTS = ("rtt_p50_ns", "rtt_p99_ns")


def _rtt_row(store: Store, e: Any) -> dict[str, Any]:
    """An rtt cell: the median over its runs (measurement faults left out) of each run's
    RTT p50 and p99, and the probes lost."""
    from netassay.methods.rtt import store as RS

    runs = [r for r in RS.runs(store, e.id, blobs=False) if not r.excluded]

    def over_runs(stat: str) -> float | None:
        v = [r.summary.get("segments", {}).get("rtt", {}).get(stat) for r in runs]
        v = [float(x) for x in v if x is not None]
        return float(np.median(v)) if v else None

    sent = sum(r.sent for r in runs)
    return {
        "verdict": None,
        "runs": len(runs),
        "rtt_p50_ns": over_runs("p50_ns"),
        "rtt_p99_ns": over_runs("p99_ns"),
        "loss_ratio": (sent - sum(r.received for r in runs)) / sent if sent else None,
    }


def is_accept(result: dict[str, Any]) -> bool:
    return result.get("method") == "accept"


def is_rtt(result: dict[str, Any]) -> bool:
    return result.get("method") == "rtt"


def level_number(factor: str, value: Any) -> float:
    v = PARAMS[factor].check(value) if factor in PARAMS else value
    return float(v) if isinstance(v, int | float) else parse_count(str(v))


def _orderer(spec: dict[str, Any]) -> Any:
    """Levels in order: numbers by value, others as the campaign file lists them."""
    listed = {f: [repr(v) for v in levels] for f, levels in spec.get("factors", {}).items()}

    def order(factor: str, value: Any) -> Any:
        if factor in PARAMS and PARAMS[factor].ordinal:
            return (0, level_number(factor, value), "")
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
    spec = (store.campaign(rs[0]["campaign"]) or {}).get("spec", {})
    order = [f for f in spec.get("factor_order", []) if f in have]
    factors = order + sorted(have - set(order))  # the file's order
    chosen = resolve_by(by, factors) if by else factors
    level_order = _orderer(spec)
    kinds = {r["kind"] for r in rs}
    method = next(iter(kinds)) if kinds in ({"accept"}, {"rtt"}) else spec.get("method", "sweep")
    accept, rtt = method == "accept", method == "rtt"
    metrics = ACCEPT_EFFECTS if accept else RTT_EFFECTS if rtt else (AC.PDR,)
    figures = ACCEPT_FIGURES if accept else RTT_FIGURES if rtt else AC.LAB_FIGURES
    effects = []
    for f in chosen:
        levels = sorted(
            {repr(r["factors"][f]): r["factors"][f] for r in rs}.values(),
            key=lambda v, f=f: level_order(f, v),
        )
        ordinal = f in PARAMS and PARAMS[f].ordinal
        effects += [
            AC.effect(rs, f, levels, ordinal, lambda v, f=f: level_number(f, v), m) for m in metrics
        ]
    return {
        "campaign": rs[0]["campaign"],
        "method": method,
        "factors": factors,
        "by": chosen,
        "experiments": sorted(rs, key=lambda r: r["position"]),
        "groups": AC.groups(rs, chosen, level_order, figures, lowest_first=rtt),
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
        if is_accept(result) or is_rtt(result):
            what = accept_group_text(g) if is_accept(result) else rtt_group_text(g)
            lines.append(f"#{g['rank']} {lv}: n={g['experiments']} {what}")
            continue
        p = g["pdr_pps"]
        spread = f" [{_pps(p['min'])}..{_pps(p['max'])}]" if p["n"] > 1 else ""
        verdicts = ", ".join(f"{k} {n}" for k, n in g["verdicts"].items())
        lines.append(
            f"#{g['rank']} {lv}: n={g['experiments']} PDR {_pps(p['median'])}{spread} "
            f"NDR {_pps(g['ndr_pps']['median'])}; {verdicts}; worst dUCL95 below PDR "
            f"{_num(g['worst_delta_ucl95_below_pdr'])}; CPU busy {_cpu(g['cpu_busy'])}"
        )
    for e in result["effects"]:
        test = e["test"] or "one level: nothing to compare"
        what = METRIC_NAMES.get(e.get("metric", AC.PDR), e.get("metric"))
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
                f"{shift_text(e.get('metric', AC.PDR), c)}"
            )
    return lines


METRIC_NAMES = {
    "pdr_pps": "PDR",
    "throughput_bps": "throughput",
    "loss_ratio": "loss ratio",
    "rtt_p50_ns": "RTT p50",
    "rtt_p99_ns": "RTT p99",
}


def fmt_us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f} us"


def rtt_group_text(g: dict[str, Any]) -> str:
    """An rtt group: RTT p50 (median over the cells, range), p99, probes lost."""
    p50, p99 = g["rtt_p50_ns"], g["rtt_p99_ns"]
    spread = f" [{fmt_us(p50['min'])}..{fmt_us(p50['max'])}]" if p50["n"] > 1 else ""
    return (
        f"RTT p50 {fmt_us(p50['median'])}{spread}; p99 {fmt_us(p99['median'])}; "
        f"lost {_ratio(g['loss_ratio']['median'])}"
    )


def _bps(v: float | None) -> str:
    from netassay.analysis.acceptance import fmt_bps

    return "-" if v is None else fmt_bps(v)


def _ratio(v: float | None) -> str:
    from netassay.analysis.acceptance import fmt_pct

    return fmt_pct(v)


def shift_text(metric: str, c: dict[str, Any]) -> str:
    """A comparison's Hodges-Lehmann shift, signed, in its metric's unit."""
    v = c.get(AC.shift_key(metric))
    if v is None:
        return "-"
    sign = "+" if v >= 0 else "-"
    if metric == "throughput_bps":
        return sign + _bps(abs(v))
    if metric == "loss_ratio":
        return sign + _ratio(abs(v))
    if metric.endswith("_ns"):
        return sign + fmt_us(abs(v))
    return _signed_pps(v)


def accept_group_text(g: dict[str, Any]) -> str:
    """An acceptance group: throughput (median, range), loss, failed seconds, verdicts."""
    t, loss = g["throughput_bps"], g["loss_ratio"]
    spread = f" [{_bps(t['min'])}..{_bps(t['max'])}]" if t["n"] > 1 else ""
    verdicts = ", ".join(f"{k} {n}" for k, n in g["verdicts"].items())
    return (
        f"throughput {_bps(t['median'])}{spread}; loss {_ratio(loss['median'])}; "
        f"failed seconds {_num(g['failed_seconds']['median'], 'g')}; {verdicts}; "
        f"CPU busy {_cpu(g['cpu_busy'])}"
    )


def _signed_pps(v: float | None) -> str:
    if v is None:
        return "-"
    return ("+" if v >= 0 else "-") + fmt_rate(abs(v))
