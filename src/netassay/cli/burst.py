"""The burst command: back-to-back frames (RFC 2544 26.4, RFC 9004)."""

from __future__ import annotations

import typer

from netassay import names
from netassay.cli.common import STORE, Given, Json, progress_line, runs_with, with_params
from netassay.config import TestbedConfig
from netassay.methods.base import RunOptions
from netassay.methods.burst.method import METHOD
from netassay.methods.burst.request import RETRIES, RUN_OPTIONS, BurstRequest


@with_params(
    BurstRequest, RunOptions, TestbedConfig, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE},
)  # fmt: skip
def burst(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Find the longest burst the SUT forwards without loss (RFC 2544 back-to-back
    frames, as RFC 9004 updates it): bursts at the highest rate the generator paces
    (--burst-rate), a binary search on their length per test, --tests tests (50 by the
    RFC), each burst followed by --wait idle. The mean and its 95% CI, and the buffer
    time it implies; with --throughput (the SUT's) RFC 9004's corrected buffer time,
    which takes out the frames forwarded while the burst came in. Stored as kind burst
    in --db, each burst as it ends."""
    req, options = runs_with(ctx, given, "burst")
    show = (lambda line: None) if as_json else progress_line
    result = METHOD.run(req, options, show)
    typer.echo(METHOD.view(result, as_json))


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the burst command to the CLI."""
    app.command("burst")(burst)
