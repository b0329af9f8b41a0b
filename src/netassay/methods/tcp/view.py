"""A TCP cell in words and as one JSON object: the path as built, the throughput over
the runs with its interval, each bound beside it and which one binds, the window asked
for and the one the receiver advertised, what the path's line counted, and the line's
limit beside the most the runs offered it."""

from __future__ import annotations

import json
from typing import Any

from netassay.methods.tcp.store import StoredTcp, TcpRun

BOUND_NAMES = {"loss": "loss (Mathis)", "window": "window (W/RTT)", "path": "path rate"}


def mbps(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:.3g} Mbit/s"


def _window(c: dict[str, Any], runs: list[TcpRun]) -> str:
    adv = [w for r in runs if (w := r["snd_wnd_max_bytes"])]
    read = f"advertised up to {max(adv)} bytes (read back: tcpi_snd_wnd)" if adv else "not read"
    asked = f"--window {c['window']:.0f} bytes (iperf3 -w, both ends)" if c.get("window") \
        else "the kernel's autotuning"  # fmt: skip
    return f"{asked}; {read}"


def limit_line(c: dict[str, Any], runs: list[TcpRun]) -> str:
    """The delay line's limit the cell ran under and the most its runs offered it."""
    limit: dict[str, Any] | None = c.get("line_limit") or next(
        ({"pps": x.get("line_limit_pps"), "l1_bps": x.get("line_limit_l1_bps"),
          "from": x.get("line_limit_from")} for x in runs if x.get("line_limit_from")),
        None,
    )  # fmt: skip
    offered = [float(o) for x in runs if (o := x.get("offered_pps"))]
    most = f"; the runs offered it up to {max(offered) / 1e3:.1f} kpps" if offered else ""
    if limit is None:
        return "line limit: not known (stored before netassay kept it with each run)"
    if limit.get("pps") is None:
        return f"line limit: not known ({limit.get('from')}){most}"
    return (f"line limit: {limit['pps'] / 1e3:.1f} kpps ({mbps(limit['l1_bps'])} at L1 in "
            f"1514-byte frames; {limit.get('from')}){most}")  # fmt: skip


def lines(r: StoredTcp) -> list[str]:
    c, s, p = r.config, r.summary, r.config.get("path", {})
    if c.get("delay_s") is None:  # imported: the path is not known
        rtt = c.get("rtt_path_s")
        head = (
            f"tcp {c['cc']}: imported from iperf3 ({', '.join(c.get('files', []))}); the "
            "path is not known" + (f", smallest RTT sample {rtt * 1e3:.3f} ms" if rtt else "")
        )
    else:
        head = (f"tcp {c['cc']}: delay {c['delay_s'] * 1e3:g} ms each way (round trip "
                f"{c['rtt_path_s'] * 1e3:.3f} ms by ping), loss {c['loss']:g}, bottleneck "
                f"{mbps(c.get('bottleneck_bps'))} at L1")  # fmt: skip
    ci = s.throughput_ci95_bps
    ci_text = f" (95% CI {mbps(ci[0])} .. {mbps(ci[1])})" if ci else ""
    out = [head, f"  throughput {mbps(s.throughput_bps)} mean of {s.used} run(s)"
                 f"{ci_text}, median {mbps(s.throughput_median_bps)}; "
                 f"{s.retransmits} retransmits"]  # fmt: skip
    if s.runs:
        last = next((x for x in reversed(r.runs) if x.get("ok")), r.runs[-1])
        parts = [f"{BOUND_NAMES[k]} {mbps(v)}"
                 for k, v in (("loss", last["mathis_bps"]), ("window", last["window_bps"]),
                              ("path", last["path_bps"]))
                 if v]  # fmt: skip
        if parts:
            of = f"; measured {s.of_bound:.2f} of it" if s.of_bound else ""
            out.append(f"  bounds: {', '.join(parts)}: {BOUND_NAMES.get(s.binds or '', '-')}"
                       f" binds{of}")  # fmt: skip
        elif c.get("delay_s") is None:
            out.append("  bounds: none known (the path's loss and rate are not known, no -w)")
        else:
            out.append("  bounds: none (no loss, no window, no bottleneck)")
    out.append(f"  window: {_window(c, r.runs)}")
    dropped = sum(int(x.get("line_dropped") or 0) for x in r.runs)
    late = max((int(x.get("line_late_max_ns") or 0) for x in r.runs), default=0)
    kind = str(p.get("delay_kind", "?"))
    line = f", dropped {dropped} frames, latest departure {late / 1e3:.0f} us late" \
        if "line" in kind else ""  # fmt: skip
    out.append(f"  path: delayed by {kind}{line}" if c.get("delay_s") is not None
               else f"  path: {kind}")  # fmt: skip
    if "line" in kind:
        out.append(f"  {limit_line(c, r.runs)}")
    out.append("  runs: " + "  ".join(
        f"{x['index'] + 1}: {mbps(x.get('throughput_bps'))}" + ("" if x["ok"] else " FAULT")
        for x in r.runs))  # fmt: skip
    out += [f"  fault: {f}" for f in s.faults]
    if r.db is not None and r.experiment is not None:
        out.append(f"  stored in {r.db} (experiment {r.experiment.id})")
    return out


def text(r: StoredTcp) -> str:
    return "\n".join(lines(r))


def as_dict(r: StoredTcp) -> dict[str, Any]:
    runs = [{k: v for k, v in x.items() if k != "iperf3"} for x in r.runs]
    return {
        "method": "tcp",
        "db": str(r.db) if r.db else None,
        "experiment_id": r.experiment.id if r.experiment else None,
        "label": r.experiment.label if r.experiment else None,
        "config": r.config,
        **r.summary.to_json(),
        "run_details": runs,
    }


def as_json(r: StoredTcp) -> str:
    return json.dumps(as_dict(r), sort_keys=True, default=str, allow_nan=False)


def group_text(g: dict[str, Any]) -> str:
    """A group of a campaign's TCP cells: throughput (median, range), retransmits, CPU."""
    t, rt = g["throughput_bps"], g["retransmits"]
    spread = f" [{mbps(t['min'])}..{mbps(t['max'])}]" if t["n"] > 1 else ""
    cpu = " ".join(f"{k}:{v:.0%}" for k, v in g["cpu_busy"].items()) or "-"
    rts = "-" if rt["median"] is None else format(rt["median"], "g")
    return f"throughput {mbps(t['median'])}{spread}; retransmits {rts}; CPU busy {cpu}"
