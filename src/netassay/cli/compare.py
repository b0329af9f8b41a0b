"""The compare command: a store's rtt configurations, or its campaigns' cells (each
campaign, or the one ``--campaign`` names), with tests and effect sizes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from netassay import methods as registry
from netassay.cli.common import Json, OldDbArg, store_given
from netassay.errors import UsageError
from netassay.methods.base import CompareHow
from netassay.store.db import Store

By = Annotated[
    list[str] | None,
    typer.Option(
        "--by",
        metavar="FACTOR",
        help="Group by this factor (repeat): an rtt store's path, probe, rate, size, load, "
        "load-type, load-count, load-location, responder, delay, capture; a campaign's own "
        "factors (those its file varies).",
    ),
]
Segments = Annotated[
    list[str] | None,
    typer.Option("--segment", metavar="SEGMENT", help="Segments (repeat) [rtt overhead ...]."),
]
Stat = Annotated[
    str,
    typer.Option(
        "--stat",
        metavar="p50|p90|p99|p999|mean|min|max",
        help="Per-run statistic: p50 p90 p99 p999 mean min max.",
    ),
]
Paired = Annotated[
    bool,
    typer.Option("--paired", help="Runs paired by position: Wilcoxon signed-rank.", metavar=""),
]
Out = Annotated[
    str | None,
    typer.Option("--out", metavar="DIR", help="Write figures and index.html to this folder."),
]
CampaignOpt = Annotated[
    str | None,
    typer.Option(
        "--campaign", metavar="NAME", help="The campaign to compare (default: each in the store)."
    ),
]


StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--db", metavar="FILE", show_default=False,
        help="A store with a campaign, 'netassay rtt' runs, floods or sweeps. \\[required]",
    ),
]  # fmt: skip


def compare(
    ctx: typer.Context, old_db: OldDbArg = None, db: StoreOpt = None, by: By = None,
    segment: Segments = None, stat: Stat = "p50", paired: Paired = False,
    out: Out = None, campaign: CampaignOpt = None, as_json: Json = False,
) -> None:  # fmt: skip
    """Compare rtt configurations, or a campaign's cells (PDR by factor): tests, effects;
    a store's floods side by side by their MRR, its sweeps by their PDR, verdicts and loss
    per load. A store with several campaigns has each compared in turn (one JSON object
    each)."""
    db = store_given(ctx, db, old_db)
    with Store(db, readonly=True) as st:
        results, text, page = _compared(st, by or [], segment, stat, paired, out, campaign)
    if as_json:
        typer.echo("\n".join(json.dumps(r, indent=2, sort_keys=True, default=str) for r in results))
    else:
        typer.echo("\n".join(text))
    if page is not None:
        typer.echo(f"report written: {page}")


def _compared(
    st: Store, by: list[str], segment: list[str] | None, stat: str, paired: bool,
    out: str | None, campaign: str | None,
) -> tuple[list[dict[str, Any]], list[str], Path | None]:  # fmt: skip
    """(each comparison, their text, a page when asked): the store's campaigns (each, or
    the one named), else what each method sets side by side (``Method.compare``)."""
    from netassay.campaign import results as campaign_results  # deferred: scipy (0.2 s)

    names = campaign_results.campaign_names(st)
    if names or campaign is not None:
        chosen = _chosen(st, names, campaign)
        results = [campaign_results.comparison(st, by, name) for name in chosen]
        text = []
        if len(chosen) > 1:
            heading = f"{len(chosen)} campaigns in {st.path}: {', '.join(chosen)}"
            text = [f"{heading} (--campaign NAME for one)", ""]
        for r in results:
            text += [*campaign_results.text(r), ""]
        return results, text[:-1], None
    how = CompareHow(tuple(by), None if segment is None else tuple(segment), stat, paired, out)
    # each method's results side by side (None: it has none, or too few to compare)
    found = [c for m in registry.comparing() if (c := m.compare(st, how)) is not None]
    if not found:
        _nothing(st)
    text = [line for c in found for line in ("", *c.lines)]
    page = next((c.page for c in found if c.page is not None), None)
    return [c.result for c in found], text[1:], page


def _nothing(st: Store) -> None:
    """Nothing compare takes: one line saying what it takes and what the store holds."""
    kinds = Counter(e.kind for e in st.experiments())
    held = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common()) or "no experiment"
    raise UsageError(
        f"{st.path}: nothing to compare",
        f"compare takes a campaign's cells, rtt runs, floods, or two or more sweeps; "
        f"the store holds {held}",
        f"'netassay assess {st.path}' shows what it holds" if kinds else
        "measure into it with --db first",
    )  # fmt: skip


def _chosen(st: Store, names: list[str], campaign: str | None) -> list[str]:
    """The campaigns to compare: the one named (it must hold cells), else every one."""
    if campaign is None:
        return names
    if campaign not in names:
        held = ", ".join(names) if names else "none"
        raise UsageError(
            f"no campaign '{campaign}' with cells in {st.path}",
            f"its campaigns: {held}",
            "give one of them to --campaign",
        )
    return [campaign]


def register(app: typer.Typer) -> None:
    """Add the compare command to the CLI."""
    app.command("compare")(compare)
