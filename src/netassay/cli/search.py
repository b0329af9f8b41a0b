"""The search command (MLRsearch): its request from the flags, the method run, its result."""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

import typer

from netassay import methods as registry
from netassay import names
from netassay.cli.common import (
    STORE,
    DryRun,
    FailOn,
    Given,
    Json,
    check_fail_on,
    gate,
    progress_line,
    runs_with,
    with_params,
)
from netassay.cli.series import per_value
from netassay.config import TestbedConfig
from netassay.errors import Interrupted
from netassay.methods.base import Method, RunOptions
from netassay.methods.search.request import RETRIES, RUN_OPTIONS, SearchRequest
from netassay.shared.series_plan import Series
from netassay.shared.sizes import SizesFlag


@with_params(
    SearchRequest, RunOptions, TestbedConfig, SizesFlag, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE},
)  # fmt: skip
def search(
    ctx: typer.Context, given: Given, as_json: Json = False, dry_run: DryRun = False,
    fail_on: FailOn = None,
) -> None:  # fmt: skip
    """Find NDR and PDR with MLRsearch (FD.io CSIT); each trial is stored as it ends."""
    run = runs_with(ctx, given, "search", series=True)  # --testbed named, --max-load held
    if isinstance(run, Series):  # --sizes, or a scale knob's list: a search per value
        kv = {"dry_run": dry_run, "fail_on": fail_on}
        return per_value(run, inspect.unwrap(search), ctx, as_json, **kv)
    method = registry.method("search")  # deferred by the registry: MLRsearch (0.3 s)
    req, options = run
    if not dry_run:
        check_fail_on(fail_on)
    try:
        result = method.run(req, replace(options, dry_run=dry_run), progress_line)
    except KeyboardInterrupt as exc:  # its notes: what of it is stored, how to go on
        raise Interrupted("search interrupted", *getattr(exc, "__notes__", [])[:2]) from exc
    if dry_run:  # what it would run
        typer.echo(method.view(result, as_json))
    else:
        _ended(method, result, as_json, fail_on)


def _ended(method: Method, report: Any, as_json: bool, fail_on: str | None) -> None:
    """What a search says when it ends; exit 9 when it did not find every goal
    (``SearchReport.check``), and the --fail-on gate on its verify sweep's verdict."""
    typer.echo(method.view(report, as_json))
    report.check()
    gate(fail_on, [method.judged(report)])


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the search command to the CLI."""
    app.command("search")(search)
