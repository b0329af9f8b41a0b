"""A series on the command line (``--sizes 64,512,1518``, ``--routes 1,1k,100k,1M``):
one command run once per value (sweep, search, flood), each value's result stored and
shown as it ends, then the series' table. The list is read and checked below
(``invoke.resolve`` with ``series=True``, ``shared.series_plan``); a command given one
runs it here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer

from netassay import methods as registry
from netassay.cli.common import err
from netassay.errors import Interrupted, NetassayError
from netassay.shared.series_plan import Series


def per_value(
    series: Series, command: Callable[..., None], ctx: typer.Context, as_json: bool, **kv: Any
) -> None:
    """Run ``command`` (a command's own function, undecorated) once per value of
    ``series``, everything else as the command was given it, then the series' tables
    (none with --dry-run). A value that fails is said and the series goes on; its error
    ends the command after the tables."""
    dry = bool(kv.get("dry_run"))
    since = 0 if dry else series.since()
    failed: NetassayError | None = None
    for i, value in enumerate(series.values, 1):
        err(series.heading(value, i))
        try:
            command(ctx=ctx, given=series.given_at(value), as_json=as_json, **kv)
        except Interrupted:
            raise
        except NetassayError as exc:  # said; the next value goes on
            err(f"netassay: {series.named(value)}: {exc.line()}")
            failed = failed or exc
    if not dry:
        for obj, text in series.tables(since, registry.of_kind):
            typer.echo(json.dumps(obj, allow_nan=False) if as_json else text)
    if failed is not None:
        raise failed
