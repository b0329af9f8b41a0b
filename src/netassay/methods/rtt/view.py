"""An rtt measurement in words and as JSON: a line per run as it ends, the summary over
runs, netassay's numbers beside ping's and irtt's, and a comparison of configurations."""

from __future__ import annotations

import json
from typing import Any

from netassay.analysis.acceptance import fmt_pct
from netassay.analysis.effects import over_runs
from netassay.hist import Hist
from netassay.methods.rtt.compare import RttComparison
from netassay.units import fmt_us


def run_object(m: Any, res: Any) -> dict[str, Any]:
    req = res.config or m.req
    s = res.summary()
    return {
        "path": req.path, "probe": req.spec.probe, "rate_pps": req.spec.rate_pps,
        "size_bytes": req.spec.size_bytes, "responder": req.responder_kind,
        "responder_delay_ns": req.responder_delay_ns or 0, "load": req.load.label,
        "capture": req.capture,
        "experiment_id": m.experiments.get(req.responder_delay_ns), **s,
    }  # fmt: skip


def json_line(m: Any, res: Any) -> str:
    return json.dumps(run_object(m, res), sort_keys=True)


def json_peer(m: Any, peer: Any) -> str:
    req = m.req
    return json.dumps({"path": req.path, "rate_pps": req.spec.rate_pps,
                           "size_bytes": req.spec.size_bytes, "load": req.load.label,
                           **peer.summary()}, sort_keys=True)  # fmt: skip


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.1f}"


def text_line(m: Any, res: Any) -> str:
    s = res.summary()
    seg = s["segments"]
    hold = ""
    if m.req.delays:
        hold = f" hold {(res.config.responder_delay_ns or 0) / 1e3:g}us"
    parts = [f"run {res.index + 1}/{m.req.runs}{hold}: sent {s['sent']} lost {s['lost']}"]
    for k in ("rtt", "overhead", "wire", "response", "latency"):
        if k in seg:
            parts.append(f"{k} p50 {_us(seg[k]['p50_ns'])} p99 {_us(seg[k]['p99_ns'])}")
    line = " | ".join(parts) + " (us)"
    if s["warnings"]:
        line += f"  [{'; '.join(s['warnings'])}]"
    return line


def text_summary(m: Any) -> list[str]:
    out: list[str] = []
    keys = ("rtt", "overhead", "wire", "response", "latency", "latency_sent", "app")
    for plan in m.req.plans():
        results = [r for r in m.results if r.config is None or r.config == plan]
        hold = f", hold {(plan.responder_delay_ns or 0) / 1e3:g}us" if m.req.delays else ""
        out.append(f"over {len(results)} runs{hold} (median of the runs' values, bootstrap"
                   " 95% CI), us:")  # fmt: skip
        for k in keys:
            p50 = [r.hists[k].percentile(50) for r in results if r.hists[k].n]
            p99 = [r.hists[k].percentile(99) for r in results if r.hists[k].n]
            if not p50:
                continue
            a, b = over_runs(p50), over_runs(p99)
            ci = "" if a["ci95"] is None else f" [{_us(a['ci95'][0])}, {_us(a['ci95'][1])}]"
            out.append(f"  {k:<13} p50 {_us(a['median'])}{ci}  p99 {_us(b['median'])}")
    if m.peers:
        out.extend(side_by_side(m))
    if m.experiments:
        ids = ", ".join(str(i) for i in m.experiments.values())
        out.append(f"stored {len(m.results)} run(s) in {m.req.db} (experiment {ids})")
    return out


def compare_text(result: RttComparison, segments: list[str]) -> list[str]:
    out: list[str] = []
    stat = result.statistic
    out.append(f"per configuration: median over runs of the runs' {stat} [bootstrap 95% CI], us")
    for i, row in enumerate(result.configurations):
        out.append(f"#{i + 1} {row.configuration}  runs {row.runs}"
                   + (f" (+{row.excluded} excluded)" if row.excluded else ""))  # fmt: skip
        for seg in segments:
            s = row.segments[seg]
            ci = "" if not s["ci95"] else f" [{_us(s['ci95'][0])}, {_us(s['ci95'][1])}]"
            out.append(f"   {seg:<12} {_us(s['median'])}{ci}")
    if result.pairwise:
        out.append("against #1:")
    for pair in result.pairwise:
        t = pair.test
        if t.get("p") is None:
            out.append(f"   {pair.segment:<12} {pair.a}: too few runs for {t['test']}")
            continue
        if t["test"] == "Mann-Whitney U":
            effect = (f"Cliff's delta {t['cliffs_delta']:+.2f} ({t['effect']}),"
                      f" shift {_us(t['hodges_lehmann'])} us")  # fmt: skip
        else:
            effect = f"median difference {_us(t['median_difference'])} us"
        out.append(f"   {pair.segment:<12} {pair.a}: {effect}; {t['test']} p={t['p']:.3g}")
    for trend in result.trends:
        k = trend.test
        out.append(f"trend of {trend.segment} with the number of {trend.load} loads:"
                   f" Kendall tau-b {k['tau_b']:+.2f} (p={k['p']:.3g}, {k['n']} runs)")  # fmt: skip
    for side in result.sides:
        t = side.test
        head = f"sender side - responder side (overhead - response), {side.configuration}:"
        diff = t["median_difference"]
        if t["p"] is None:
            out.append(f"{head} median difference {_us(diff)} us ({t['n']} runs, no test)")
        else:
            out.append(f"{head} median difference {_us(diff)} us; {t['test']} paired by run"
                       f" p={t['p']:.3g} ({t['n']} runs)")  # fmt: skip
    return out


def side_by_side(m: Any) -> list[str]:
    """netassay's numbers beside ping's and irtt's (all runs' probes together), us."""
    out: list[str] = []

    def merged(name: str) -> Hist:
        h = Hist()
        for r in m.results:
            h.merge(r.hists[name])
        return h

    rows = [("netassay rtt (endpoint NIC out and back)", merged("rtt")),
            ("netassay latency_kernel (as ping: send call", merged("latency_kernel")),
            ("  to the reply at the endpoint NIC)", Hist()),
            ("netassay latency_sent (as irtt: send call", merged("latency_sent")),
            ("  to the reply read)", Hist())]  # fmt: skip
    rows += [(f"{p.peer} ({p.received}/{p.sent})", p.hist) for p in m.peers]
    out.append("side by side, us:              min      p50      p90      p99      max")
    for label, h in rows:
        if h.n == 0:
            out.append(f"  {label}")
            continue
        s = h.summary()
        cells = "".join(
            f"{_us(s[k]):>9}" for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")
        )
        out.append(f"  {label:<42}{cells}")
    return out


def rtt_group_text(g: dict[str, Any]) -> str:
    """An rtt group of a campaign: RTT p50 (median over the cells, range), p99, lost."""
    p50, p99 = g["rtt_p50_ns"], g["rtt_p99_ns"]
    spread = f" [{fmt_us(p50['min'])}..{fmt_us(p50['max'])}]" if p50["n"] > 1 else ""
    return (
        f"RTT p50 {fmt_us(p50['median'])}{spread}; p99 {fmt_us(p99['median'])}; "
        f"lost {fmt_pct(g['loss_ratio']['median'])}"
    )
