"""The soak command: one long trial at a fixed load, read every second, judged."""

from __future__ import annotations

import typer

from netassay import names
from netassay.cli.common import (
    STORE,
    FailOn,
    Given,
    Json,
    check_fail_on,
    gate,
    progress_line,
    runs_with,
    with_params,
)
from netassay.config import TestbedConfig
from netassay.methods.base import RunOptions
from netassay.methods.soak.method import METHOD
from netassay.methods.soak.request import RETRIES, RUN_OPTIONS, SoakRequest


@with_params(
    SoakRequest, RunOptions, TestbedConfig, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE},
)  # fmt: skip
def soak(ctx: typer.Context, given: Given, as_json: Json = False, fail_on: FailOn = None) -> None:
    """Hold one load for a long time, read every second, and judge its loss (a soak).
    --rate is a rate (200k) or a share of the newest search's PDR in --db (90%pdr); the
    soak runs as back-to-back stored segments, each read every second: per-second loss
    (an estimate), rate and CPU, the events where loss appears, and a PASS/FAIL verdict
    of the whole run's loss ratio against --goal. --resume continues an unfinished soak."""
    check_fail_on(fail_on)
    # --testbed: one that exists, e.g. the user's own ports ('testbed external'); the
    # load is checked against its line rate when the soak starts (a %pdr load then known)
    req, options = runs_with(ctx, given, "soak")
    show = (lambda line: None) if as_json else progress_line
    result = METHOD.run(req, options, show)  # Interrupted: what is stored
    typer.echo(METHOD.view(result, as_json))
    gate(fail_on, [METHOD.judged(result)])


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the soak command to the CLI."""
    app.command("soak")(soak)
