"""The recovery command: system recovery after an overload (RFC 2544 26.5)."""

from __future__ import annotations

import typer

from netassay import names
from netassay.cli.common import STORE, Given, Json, progress_line, runs_with, with_params
from netassay.config import TestbedConfig
from netassay.methods.base import RunOptions
from netassay.methods.recovery.method import METHOD
from netassay.methods.recovery.request import RETRIES, RUN_OPTIONS, RecoveryRequest


@with_params(
    RecoveryRequest, RunOptions, TestbedConfig, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE},
)  # fmt: skip
def recovery(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """How long the SUT takes to recover from an overload (RFC 2544 system recovery):
    a load at --overload (110%) of its --throughput (a rate, or the newest search's
    PDR in --db) for --overload-time, then half of it; the time from the overload's end
    to the first --interval in which the SUT forwarded what it was offered, per trial,
    with its mean and 95% CI. Stored as kind recovery in --db."""
    req, options = runs_with(ctx, given, "recovery")
    show = (lambda line: None) if as_json else progress_line
    result = METHOD.run(req, options, show)
    typer.echo(METHOD.view(result, as_json))


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the recovery command to the CLI."""
    app.command("recovery")(recovery)
