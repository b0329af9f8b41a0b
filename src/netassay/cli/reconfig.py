"""The reconfig command: the loss a reconfiguration of the SUT causes under load."""

from __future__ import annotations

import typer

from netassay import names
from netassay.cli.common import STORE, Given, Json, progress_line, runs_with, with_params
from netassay.config import TestbedConfig
from netassay.methods.base import RunOptions
from netassay.methods.reconfig.method import METHOD
from netassay.methods.reconfig.request import RETRIES, RUN_OPTIONS, ReconfigRequest


@with_params(
    ReconfigRequest, RunOptions, TestbedConfig, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE},
)  # fmt: skip
def reconfig(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Measure the loss a reconfiguration causes (FD.io CSIT's reconfiguration test):
    a load below the SUT's throughput (--rate: a rate, or N%pdr of the newest search in
    --db) while --change runs in the SUT's namespace --at seconds in (e.g. "nft -f
    rules.nft", "ip -batch routes"); the frames lost and the effective blocked time
    (lost / rate) per trial, with their mean and 95% CI. --undo restores the SUT after
    each trial. Stored as kind reconfig in --db."""
    req, options = runs_with(ctx, given, "reconfig")
    show = (lambda line: None) if as_json else progress_line
    result = METHOD.run(req, options, show)
    typer.echo(METHOD.view(result, as_json))


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the reconfig command to the CLI."""
    app.command("reconfig")(reconfig)
