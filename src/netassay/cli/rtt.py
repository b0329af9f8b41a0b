"""Commands of round-trip time (seed 002): rtt, import ping."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from netassay import methods as registry
from netassay import names
from netassay.cli.common import NOT_STORED, Given, Json, prepared, stored_what, with_params
from netassay.errors import Interrupted
from netassay.invoke import request_of
from netassay.methods.base import RunOptions
from netassay.methods.rtt.request import RUN_OPTIONS, RttRequest
from netassay.store.db import Store


@with_params(
    RttRequest, RunOptions, only=RUN_OPTIONS, shown={"name": names.RTT_NAME}, helps=NOT_STORED
)
def rtt(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Round-trip time between two endpoints, split at in-kernel capture points (seed 002)."""
    from netassay.methods.rtt import view  # deferred: scipy (0.2 s)
    from netassay.methods.rtt.run import measure_all

    given, options = prepared(ctx, given, "rtt")
    req, options = request_of("rtt", given, options)
    setup = registry.method("rtt").setup(req, options)
    ended: list[Any] = []

    def show(m: Any, r: Any) -> None:
        ended.append(r)
        typer.echo(view.json_line(m, r) if as_json else view.text_line(m, r))

    peer = (lambda m, p: typer.echo(view.json_peer(m, p))) if as_json else None
    try:
        m = measure_all(setup, show, peer)
    except KeyboardInterrupt as exc:
        raise Interrupted("rtt interrupted", stored_what(len(ended), "run", setup.db)) from exc
    if not as_json:
        typer.echo("\n".join(view.text_summary(m)))


def import_ping(
    files: Annotated[list[str], typer.Argument(help="iputils ping output (ping -D ...).")],
    db: Annotated[str, typer.Option("--db", help="SQLite store to write (created if new).")],
    label: Annotated[str, typer.Option("--label", help="Experiment label.")] = "",
) -> None:
    """Import iputils ping output as rtt runs (probe ping), beside netassay's own."""
    from netassay.methods.rtt.ping_import import read_files, store_runs  # deferred: scipy

    parsed = read_files([Path(f) for f in files])  # all checked before the store is opened
    with Store(db) as st:
        done = store_runs(st, parsed, label)
    new = sum(1 for _, _, fresh in done if fresh)
    old = f"; {len(done) - new} already stored" if len(done) > new else ""
    typer.echo(f"imported {new} ping run(s) into {db}{old}")


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the rtt command and 'import ping' to the CLI."""
    app.command("rtt")(rtt)
    import_app.command("ping")(import_ping)
