"""Build the report of a store: figures, index.html (its figures as files beside it,
loaded as they are scrolled to), latex-include.tex."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from netassay import __version__
from netassay import methods as registry
from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig
from netassay.errors import InputError
from netassay.methods.sweep.entries import Entry
from netassay.methods.sweep.view import metadata_line
from netassay.report.campaign import campaign_pages
from netassay.report.trend import trend_sections
from netassay.shared.plots import png_size
from netassay.shared.render import Section, render
from netassay.shared.scale import sections as scale_sections
from netassay.shared.sizes import sections as size_sections
from netassay.store.paths import open_store
from netassay.units import fmt_rate

META_COLUMNS = ("class", "environment", "kernel", "pinning", "ring")


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, fmt)


def build_report(
    stores: Path | Sequence[Path],
    out: Path,
    cfg: AnalysisConfig,
    *,
    progress: bool = False,
    inputs: str | None = None,
) -> Path:
    """Write figures, index.html and latex-include.tex to ``out``; return index.html.

    ``stores`` are read in order; ``inputs`` names what the report was made from (for
    the page header; default: the stores).
    """
    stores = [stores] if isinstance(stores, Path) else list(stores)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder", "", "choose another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "figures").mkdir(exist_ok=True)
        probe = out / ".netassay-write-check"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise InputError(
            f"cannot write the report to {out}", exc.strerror or str(exc),
            "choose an --out folder you may write to",
        ) from exc  # fmt: skip
    entries: list[Entry] = []
    sections: list[Section] = []
    used: set[str] = set()
    curves = registry.method("sweep")  # the index's table: PASTRAMI's curves
    for i, db in enumerate(stores):
        suffix = f"-{i + 1}" if len(stores) > 1 else ""  # each store's pages apart
        with open_store(db) as store:
            entries.extend(curves.entries(store, out, cfg, used))
            for m in registry.storing({e.kind for e in store.experiments()}):
                sections.extend(m.sections(store, out, cfg, used, suffix))
            sections.extend(size_sections(store, out, cfg, used, registry.of_kind))
            sections.extend(scale_sections(store, out, cfg, used, registry.of_kind))
            sections.extend(campaign_pages(store, out, entries, f"-{i + 1}" if i else ""))
            sections.extend(trend_sections(store, out, cfg, used, suffix))
    jobs = [*(j for e in entries for j in e.jobs), *(j for s in sections for j in s.jobs)]
    render(jobs, progress=sys.stderr if progress else None)  # only what changed is drawn
    for s in sections:
        if s.page is not None:
            s.page()
    others = [s.as_dict() for s in sections]
    index = out / "index.html"
    source = inputs if inputs is not None else ", ".join(map(str, stores))
    index.write_text(render_html(entries, out, source, cfg, others))
    (out / "latex-include.tex").write_text(render_latex(entries))
    return index


def _row(e: Entry) -> dict[str, Any]:
    a = e.a
    worst = a.worst_delta_below_pdr()
    return {
        "slug": e.slug,
        "label": a.label,
        "meta": [str(a.metadata.get(k, "")) for k in META_COLUMNS],
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


def _img(out: Path, rel: str) -> dict[str, Any]:
    """A figure beside the page: its relative path and size (the page loads it lazily,
    its place kept before it arrives)."""
    width, height = png_size(out / rel)
    return {"src": rel, "width": width, "height": height}


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


def render_html(
    entries: list[Entry],
    out: Path,
    db: Path | str,
    cfg: AnalysisConfig,
    others: Sequence[dict[str, str]] = (),
) -> str:
    env = Environment(
        loader=PackageLoader("netassay.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    experiments = [
        {
            **_row(e),
            "reason": e.a.saturation.reason,
            "notes": [*e.a.saturation.warnings, *e.a.flags],
            "metadata": metadata_line(e.a),
            "figure": _img(out, e.figure_png),
            "figure_svg": e.figure_svg,
            "loss": _img(out, e.loss_png) if e.loss_png else None,
            "latency": _img(out, e.latency_png) if e.latency_png else None,
            "loads": _loads(e.a),
            "gaps": len(e.a.saturation.gaps),
            "imix": _mix(e.imix),
            "rates": e.rates,
            "directions": _directions(e.directions),
        }
        for e in entries
    ]
    counts = {
        v: sum(1 for e in entries if e.a.verdict == v) for v in ("GOOD", "BAD", "INCONCLUSIVE")
    }
    return env.get_template("index.html.j2").render(
        experiments=experiments,
        others=[{**o, "img": _img(out, o["figure"]) if o.get("figure") else None} for o in others],
        meta_columns=META_COLUMNS,
        truths=any(x["truth"] for x in experiments),
        counts=counts,
        db=str(db),
        cfg=cfg,
        version=__version__,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


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


def render_latex(entries: list[Entry]) -> str:
    """One figure environment per experiment, like the authors' _latex-include.tex."""
    parts = [f"% generated by netassay {__version__}; \\input{{}} this file, figures/ beside it\n"]
    for e in entries:
        a = e.a
        pdr = a.pdr.short()
        caption = (
            f"{_tex(a.label)}: {_tex(metadata_line(a))}; K={_tex(','.join(map(str, a.k_values)))}"
            f", T={_tex(f'{a.duration_s:g}') if a.duration_s else '?'} s; "
            f"PDR@{a.params['pdr'] * 100:g}\\% = {_tex(pdr)}; verdict \\textbf{{{a.verdict}}}."
        )
        parts.append(
            "\\begin{figure}[htbp]\n  \\centering\n"
            f"  \\includegraphics[width=\\linewidth]{{{e.figure_png[:-4]}}}\n"
            f"  \\caption{{{caption}}}\n  \\label{{fig:{_tex(e.slug)}}}\n\\end{{figure}}\n"
        )
    return "\n".join(parts)
