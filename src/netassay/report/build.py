"""Build the report of a store: figures, index.html (self-contained), latex-include.tex."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from netassay import __version__
from netassay.analysis.assess import Assessment
from netassay.config import AnalysisConfig
from netassay.errors import InputError
from netassay.methods.plots import data_uri, slugify
from netassay.methods.sweep.analyse import assess_store
from netassay.methods.sweep.figures import plot_assessment
from netassay.methods.sweep.view import metadata_line
from netassay.report.campaign import campaign_pages
from netassay.store.paths import open_store
from netassay.units import fmt_rate

META_COLUMNS = ("class", "environment", "kernel", "pinning", "ring")


@dataclass
class Entry:
    slug: str
    a: Assessment
    figure_png: str  # file name inside the report folder
    figure_svg: str
    loss_png: str | None
    data: dict[str, Any]


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
    others: list[dict[str, str]] = []
    used: set[str] = set()
    for i, db in enumerate(stores):
        with open_store(db) as store:
            entries.extend(_store_entries(store, out, cfg, used, progress))
            rtt_dir = f"rtt-{i + 1}" if len(stores) > 1 else "rtt"
            others.extend(_other_methods(store, out, rtt_dir, used))
            others.extend(campaign_pages(store, out, entries, f"-{i + 1}" if i else ""))
    index = out / "index.html"
    source = inputs if inputs is not None else ", ".join(map(str, stores))
    index.write_text(render_html(entries, out, source, cfg, others))
    (out / "latex-include.tex").write_text(render_latex(entries))
    return index


def _store_entries(
    store: Any, out: Path, cfg: AnalysisConfig, used: set[str], progress: bool
) -> list[Entry]:
    entries = []
    bar = _progress(sum(1 for _ in store.experiments())) if progress else None
    for a in assess_store(store, cfg):
        slug = slugify(a.label, used)
        png, svg = plot_assessment(a, out / "figures" / slug)
        loss = _loss_figure(store, a, out / "figures" / f"{slug}_loss.png")
        entries.append(
            Entry(slug, a, f"figures/{png.name}", f"figures/{svg.name}", loss, a.to_json())
        )
        if bar:
            bar.advance()
    if bar:
        bar.close()
    return entries


def _search_entry(store: Any, exp: Any, o: Any, out: Path, used: set[str]) -> dict[str, str]:
    """One search: its result in words and its load-time figure (PNG inline, SVG linked)."""
    from netassay.methods.search.figures import plot_search, points
    from netassay.methods.search.view import outcome_lines

    stem = out / "figures" / f"search_{slugify(exp.label, used)}"
    png, svg = plot_search(points(store.trials(exp.id)), o, stem, exp.label)
    return {
        "title": f"search: {exp.label}",
        "text": "\n".join(outcome_lines(o, f"experiment {exp.id}")),
        "figure": data_uri(png),
        "figure_svg": f"figures/{svg.name}",
    }


def _other_methods(
    store: Any, out: Path, rtt_dir: str, used: set[str] | None = None
) -> list[dict[str, str]]:
    """The experiments without a PASTRAMI verdict: each search's result (its verify
    sweep is a sweep of its own above), and the store's rtt comparison, whose figures
    and page go to ``out/rtt_dir`` and are linked from the index."""
    from netassay.methods.rtt.store import rtt_experiments
    from netassay.methods.search.view import stored_searches

    used = set() if used is None else used
    found = [_search_entry(store, exp, o, out, used) for exp, o in stored_searches(store)]
    if next(iter(rtt_experiments(store)), None) is not None:
        from netassay.methods.rtt import compare as C
        from netassay.methods.rtt import figures

        configs, segments, result = C.comparison(store, [], None)
        figures.render(configs, segments, "p50", result, out / rtt_dir)
        lines = [
            f"{row['configuration']}: runs {row['runs']}; "
            + ", ".join(
                f"{seg} p50 {row[seg]['median'] / 1e3:.1f} us"
                for seg in segments
                if row[seg]["median"] is not None
            )
            for row in result["configurations"]
        ]
        found.append({"title": "round-trip time (rtt)", "text": "\n".join(lines),
                      "link": f"{rtt_dir}/index.html"})  # fmt: skip
    from netassay.methods.accept.store import accept_experiments

    if next(iter(accept_experiments(store)), None) is not None:
        from netassay.methods.accept.figures import render_store

        accept_dir = rtt_dir.replace("rtt", "accept")  # accept, or accept-N with N stores
        _, tests = render_store(store, out / accept_dir)
        found.append({"title": "acceptance tests (accept)", "link": f"{accept_dir}/index.html",
                      "text": "\n".join(f"{s['label']}: {s['verdict']} ({s['reason']})"
                                        for s in tests)})  # fmt: skip
    return found


def _loss_figure(store: Any, a: Assessment, path: Path) -> str | None:
    """Stacked bars of where packets were lost, for trials that carry loss locations."""
    exp_id = a.metadata.get("experiment_id")
    if exp_id is None or store.experiment(exp_id).kind == "pastrami-import":
        return None
    trials = store.trials(exp_id)
    if not any(t.get("loss_location") for t in trials):
        return None
    try:
        from netassay.methods.sweep.loss_figure import plot_loss_location
    except ImportError:
        return None
    plot_loss_location(trials, [float(r) for r in a.table.rate_pps], path)
    return f"figures/{path.name}"


class _progress:
    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.p = Progress(TextColumn("report"), BarColumn(), MofNCompleteColumn(), transient=True)
        self.task = self.p.add_task("report", total=total)
        self.p.start()

    def advance(self) -> None:
        self.p.advance(self.task)

    def close(self) -> None:
        self.p.stop()


def _row(e: Entry) -> dict[str, Any]:
    a = e.a
    worst = a.worst_delta_below_pdr()
    return {
        "slug": e.slug,
        "label": a.label,
        "meta": [str(a.metadata.get(k, "")) for k in META_COLUMNS],
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


def _loads(a: Assessment) -> list[dict[str, str]]:
    t, s = a.table, a.saturation
    rows = []
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
            "figure": data_uri(out / e.figure_png),
            "figure_svg": e.figure_svg,
            "loss": data_uri(out / e.loss_png) if e.loss_png else None,
            "loads": _loads(e.a),
            "gaps": len(e.a.saturation.gaps),
        }
        for e in entries
    ]
    counts = {
        v: sum(1 for e in entries if e.a.verdict == v) for v in ("GOOD", "BAD", "INCONCLUSIVE")
    }
    return env.get_template("index.html.j2").render(
        experiments=experiments,
        others=list(others),
        meta_columns=META_COLUMNS,
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
