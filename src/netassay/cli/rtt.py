"""Commands of round-trip time (seed 002): rtt, compare (rtt configurations, or a
campaign's cells), import ping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from netassay import methods as registry
from netassay import names as N
from netassay.cli.common import Given, Json, request, with_params
from netassay.errors import Interrupted, UsageError
from netassay.methods.base import RunOptions
from netassay.methods.rtt.request import RUN_OPTIONS, RttRequest
from netassay.store.db import Store

By = Annotated[
    list[str] | None,
    typer.Option(
        "--by",
        help="Group by this factor (repeat): an rtt store's path, probe, rate, size, load, "
        "load-type, load-count, load-location, responder, delay, capture; a campaign's own "
        "factors.",
    ),
]


@with_params(RttRequest, RunOptions, only=RUN_OPTIONS, shown={"name": N.RTT_NAME})
def rtt(given: Given, as_json: Json = False) -> None:
    """Round-trip time between two endpoints, split at in-kernel capture points (seed 002)."""
    from netassay.methods.rtt import view as V  # deferred: scipy (0.2 s)
    from netassay.methods.rtt.run import measure_all

    options = RunOptions(name=given["name"], db=given["db"], label=given["label"] or "")
    setup = registry.method("rtt").setup(request(RttRequest, given), options)
    show = (lambda m, r: typer.echo(V.json_line(m, r))) if as_json else (
        lambda m, r: typer.echo(V.text_line(m, r))
    )  # fmt: skip
    peer = (lambda m, p: typer.echo(V.json_peer(m, p))) if as_json else None
    try:
        m = measure_all(setup, show, peer)
    except KeyboardInterrupt as exc:
        raise Interrupted(
            "rtt interrupted", "the runs that ended are stored" if setup.db else "", ""
        ) from exc
    if not as_json:
        typer.echo("\n".join(V.text_summary(m)))


def compare(
    db: Annotated[str, typer.Argument(help="A store with 'netassay rtt' runs or a campaign.")],
    by: By = None,
    segment: Annotated[
        list[str] | None, typer.Option("--segment", help="Segments (repeat) [rtt overhead ...].")
    ] = None,
    stat: Annotated[
        str, typer.Option("--stat", help="Per-run statistic: p50 p90 p99 p999 mean min max.")
    ] = "p50",
    paired: Annotated[
        bool, typer.Option("--paired", help="Runs paired by position: Wilcoxon signed-rank.")
    ] = False,
    out: Annotated[
        str | None, typer.Option("--out", help="Write figures and index.html to this folder.")
    ] = None,
    as_json: Json = False,
) -> None:
    """Compare rtt configurations, or a campaign's cells (PDR by factor): tests, effects."""
    with Store(db, readonly=True) as st:
        result, text, page = _compared(st, by or [], segment, stat, paired, out)
    if as_json:
        typer.echo(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        typer.echo("\n".join(text))
    if page is not None:
        typer.echo(f"report written: {page}")


def _compared(
    st: Store, by: list[str], segment: list[str] | None, stat: str, paired: bool, out: str | None
) -> tuple[dict, list[str], Path | None]:
    """(the comparison, its text, its page when asked): a campaign's cells, else the
    store's rtt configurations."""
    from netassay.campaign import results as CR  # deferred: scipy (0.2 s)
    from netassay.methods.rtt import compare as C
    from netassay.methods.rtt import view as V

    if CR.has_campaigns(st):
        result = CR.comparison(st, by)
        return result, CR.text(result), None
    if stat not in C.STATS:
        raise UsageError(f"unknown --stat '{stat}'", f"known: {', '.join(C.STATS)}", "e.g. p50")
    configs, segments, result = C.comparison(st, by, segment, stat, paired=paired)
    page = registry.method("rtt").page(configs, segments, stat, result, Path(out)) if out else None
    return result, V.compare_text(result, segments), page


def import_ping(
    files: Annotated[list[str], typer.Argument(help="iputils ping output (ping -D ...).")],
    db: Annotated[str, typer.Option("--db", help="Results store (SQLite).")] = "netassay.db",
    label: Annotated[str, typer.Option("--label", help="Experiment label.")] = "",
) -> None:
    """Import iputils ping output as rtt runs (probe ping), beside netassay's own."""
    from netassay.methods.rtt.ping_import import import_files  # deferred: scipy (0.2 s)

    with Store(db) as st:
        done = import_files(st, [Path(f) for f in files], label)
    new = sum(1 for _, _, fresh in done if fresh)
    old = f"; {len(done) - new} already stored" if len(done) > new else ""
    typer.echo(f"imported {new} ping run(s) into {db}{old}")


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the rtt and compare commands, and 'import ping', to the CLI."""
    app.command("rtt")(rtt)
    app.command("compare")(compare)
    import_app.command("ping")(import_ping)
