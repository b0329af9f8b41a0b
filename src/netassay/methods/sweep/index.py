"""A curve as the report's index shows it: its row of the main table and its block below
(the fields the index's template reads), and its figure in the LaTeX include."""

from __future__ import annotations

import math
from typing import Any

from netassay.analysis.assess import Assessment
from netassay.methods.sweep.view import metadata_line
from netassay.shared.render import CURVE_COLUMNS
from netassay.units import fmt_rate


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, fmt)


def fields(
    slug: str, a: Assessment, figure_svg: str, imix: dict[str, Any] | None,
    rates: list[str] | None, directions: dict[str, Any] | None,
) -> dict[str, Any]:  # fmt: skip
    """The curve's row and block (its figures' PNGs apart: ``Curve.images``)."""
    return {
        **_row(slug, a),
        "reason": a.saturation.reason,
        "notes": [*a.saturation.warnings, *a.flags],
        "metadata": metadata_line(a),
        "figure_svg": figure_svg,
        "loads": _loads(a),
        "gaps": len(a.saturation.gaps),
        "imix": _mix(imix),
        "rates": rates,
        "directions": _directions(directions),
    }


def _row(slug: str, a: Assessment) -> dict[str, Any]:
    worst = a.worst_delta_below_pdr()
    return {
        "slug": slug,
        "label": a.label,
        "meta": [str(a.metadata.get(k, "")) for k in CURVE_COLUMNS],
        "truth": ground_truth(a.metadata),
        "k": ",".join(map(str, a.k_values)),
        "duration": "" if a.duration_s is None else f"{a.duration_s:g}",
        "verdict": a.verdict,
        "pdr": a.pdr.rate_pps,
        "pdr_text": a.pdr.short(),
        "ndr": a.ndr.rate_pps,
        "ndr_text": a.ndr.short(),
        "worst": worst,
        "worst_text": _num(worst, ".3g"),
    }


def ground_truth(meta: dict[str, Any]) -> str:
    """The ground truths a measured SUT was made to hold (cap, drop), in words."""
    said = []
    if meta.get("sut_cap_pps"):
        said.append(f"cap {fmt_rate(meta['sut_cap_pps'])}")
    if meta.get("sut_drop"):
        said.append(f"drop {meta['sut_drop']:g}")
    return ", ".join(said)


def _loads(a: Assessment) -> list[dict[str, str | bool]]:
    t, s = a.table, a.saturation
    rows: list[dict[str, str | bool]] = []
    for i in range(len(t)):
        marks = [
            name
            for name, idx in (
                ("PDR", a.pdr.index),
                ("past-PDR", s.past_pdr_index),
                ("potential", s.potential_saturation_index),
                ("SAT", s.saturation_index),
            )
            if idx == i
        ]
        if i in s.exits:
            marks.append("left-sat")
        rows.append(
            {
                "rate": fmt_rate(t.rate_pps[i]),
                "k": str(int(t.k[i])),
                "gap": not t.k[i],
                "excluded": str(int(t.excluded[i])) if t.excluded[i] else "",
                "reason": t.reason[i],
                "plr": _num(t.plr[i], ".3e"),
                "std": _num(t.plr_std[i], ".2e"),
                "ucl": _num(t.ucl95[i], ".3e"),
                "delta": _num(t.delta_ucl95[i], ".3g"),
                "tir": _num(a.tir_used[i], ".3f"),
                "marks": ", ".join(marks),
            }
        )
    return rows


def _mix(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A sweep's frame mix as the report's table: its sizes, a row per load."""
    if doc is None:
        return None
    sizes = [p.split(":")[0] for p in doc["imix"].split(",")]
    rows = [_mix_row(load, sizes) for load in doc["loads"]]
    return {"mix": doc["imix"], "mean": f"{doc['mean_frame_bytes']:.1f}", "sizes": sizes,
            "rows": rows}  # fmt: skip


def _mix_row(load: dict[str, Any], sizes: list[str]) -> dict[str, Any]:
    counts = [f"{load['sizes'][s]['sent']:,} / {load['sizes'][s]['received']:,}" for s in sizes]
    return {
        "rate": f"{load['rate_pps']:,.0f}", "l2": f"{load['rate_bps_l2'] / 1e6:.2f}",
        "l1": f"{load['rate_bps_l1'] / 1e6:.2f}", "runs": load["runs"],
        "loss": "-" if load["loss_ratio"] is None else f"{load['loss_ratio']:.3%}",
        "sizes": counts,
    }  # fmt: skip


def _directions(doc: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """A ``--bidirectional`` sweep's table per direction: a row per load and direction,
    with its latency's p50 and p99 (us) when its trials kept histograms."""
    if doc is None:
        return None
    latency = {
        (d, r["rate_pps"]): r for d, rs in doc.get("latency", {}).items() for r in rs
    }  # fmt: skip
    rows = []
    for load in doc["loads"]:
        per = load["rate_pps_per_direction"]
        for d in ("forward", "reverse"):
            s, lat = load[d], latency.get((d, per), {})
            rows.append({
                "rate": f"{per:,.0f}", "aggregate": f"{load['rate_pps_aggregate']:,.0f}",
                "runs": load["runs"], "direction": d, "sent": f"{s['sent']:,}",
                "received": f"{s['received']:,}",
                "loss": "-" if s["loss_ratio"] is None else f"{s['loss_ratio']:.3%}",
                "where": s["main_location"] or "-",
                "p50": _us(lat.get("p50_ns")), "p99": _us(lat.get("p99_ns")),
            })  # fmt: skip
    return rows


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f}"


def _tex(text: str) -> str:
    repl = {
        "\\": r"\textbackslash{}",
        "_": r"\_",
        "%": r"\%",
        "&": r"\&",
        "#": r"\#",
        "$": r"\$",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\^{}",
        ">": r"\textgreater{}",
        "<": r"\textless{}",
    }
    return "".join(repl.get(c, c) for c in text)


def latex(slug: str, a: Assessment, figure_png: str) -> str:
    """The curve's figure environment, like the authors' _latex-include.tex."""
    pdr = a.pdr.short()
    caption = (
        f"{_tex(a.label)}: {_tex(metadata_line(a))}; K={_tex(','.join(map(str, a.k_values)))}"
        f", T={_tex(f'{a.duration_s:g}') if a.duration_s else '?'} s; "
        f"PDR@{a.params['pdr'] * 100:g}\\% = {_tex(pdr)}; verdict \\textbf{{{a.verdict}}}."
    )
    return (
        "\\begin{figure}[htbp]\n  \\centering\n"
        f"  \\includegraphics[width=\\linewidth]{{{figure_png[:-4]}}}\n"
        f"  \\caption{{{caption}}}\n  \\label{{fig:{_tex(slug)}}}\n\\end{{figure}}\n"
    )
