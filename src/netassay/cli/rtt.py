"""Commands of round-trip time (seed 002): rtt, import ping."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from netassay import methods as registry
from netassay import names
from netassay.cli.common import NOT_STORED, Given, Json, runs_with, with_params
from netassay.errors import Interrupted, stored_what
from netassay.methods.base import RunOptions
from netassay.methods.rtt.request import RUN_OPTIONS, RttRequest
from netassay.store.db import Store


@with_params(
    RttRequest, RunOptions, only=RUN_OPTIONS, shown={"name": names.RTT_NAME}, helps=NOT_STORED
)
def rtt(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Round-trip time between two endpoints, split at in-kernel capture points (seed 002)."""
    method = registry.method("rtt")  # deferred by the registry: scipy (0.2 s)
    req, options = runs_with(ctx, given, "rtt")
    ended: list[str] = []

    def show(line: str) -> None:  # a run's line as it is stored (JSON: all at the end)
        ended.append(line)
        if not as_json:
            typer.echo(line)

    try:
        m = method.run(req, options, show)
    except KeyboardInterrupt as exc:
        raise Interrupted("rtt interrupted", stored_what(len(ended), "run", options.db)) from exc
    shown = method.view(m, as_json)
    if shown or not as_json:  # in words its summary always; as JSON a line per run, peer
        typer.echo(shown)


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
