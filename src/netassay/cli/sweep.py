"""The sweep command: its request from the flags, the method run, its result printed."""

from __future__ import annotations

import inspect
from dataclasses import replace

import typer

from netassay import methods as registry
from netassay import names
from netassay.cli.common import (
    STORE,
    DryRun,
    FailOn,
    Given,
    Json,
    bar,
    check_fail_on,
    err,
    gate,
    runs_with,
    with_params,
)  # fmt: skip
from netassay.cli.series import per_value
from netassay.config import TestbedConfig
from netassay.errors import UsageError
from netassay.methods.base import RunOptions
from netassay.methods.sweep.request import RUN_OPTIONS, SweepRequest
from netassay.methods.sweep.run import Swept
from netassay.shared.series_plan import Series
from netassay.shared.sizes import SizesFlag
from netassay.shared.sweep_run import RETRIES


@with_params(
    SweepRequest, RunOptions, TestbedConfig, SizesFlag, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE},
)  # fmt: skip
def sweep(
    ctx: typer.Context, given: Given, dry_run: DryRun = False, as_json: Json = False,
    fail_on: FailOn = None,
) -> None:  # fmt: skip
    """Run a load sweep on the embedded testbed (or on --testbed); each trial is stored
    as it ends."""
    if given.get("at") is not None and given.get("rates") is not None:
        raise UsageError("--at with --rates", "--at picks the loads itself", "drop one of them")
    run = runs_with(ctx, given, "sweep", series=True)  # --testbed named, --rates held to it
    if isinstance(run, Series):  # --sizes, or a scale knob's list: a sweep per value
        kv = {"dry_run": dry_run, "fail_on": fail_on}
        return per_value(run, inspect.unwrap(sweep), ctx, as_json, **kv)
    method = registry.method("sweep")
    req, options = run
    if not dry_run:
        check_fail_on(fail_on)
    # Interrupted: what it stored, how to go on; --dry-run: what it would run
    result = method.run(req, replace(options, dry_run=dry_run), bar())
    if not isinstance(result, Swept):
        typer.echo(method.view(result, False))
        return
    err("")
    _ended(result, as_json, fail_on)


def _ended(result: Swept, as_json: bool, fail_on: str | None) -> None:
    """What a sweep says when it ends: where it stored what, its verdict and bounds (or
    the assess object with --json, that line then on stderr), and the --fail-on gate on
    its verdict."""
    method = registry.method("sweep")
    if as_json:  # stdout holds the JSON object alone
        err(result.stored_line())
    said = method.view(result, as_json)
    if said:  # (with --json, nothing when no load was assessed)
        typer.echo(said)
    gate(fail_on, [method.judged(result)])


CSIT_SHARES = "0,10%,50%,90%"  # of the PDR: the loads CSIT reports latency at


@with_params(
    SweepRequest, RunOptions, TestbedConfig, only=RUN_OPTIONS,
    shown={"retries": str(RETRIES), "name": names.DEFAULT_NAME, "db": STORE, "at": CSIT_SHARES},
    helps={"latency": "Always on here: each trial keeps its one-way latency histogram."},
)  # fmt: skip
def latency(
    ctx: typer.Context, given: Given, dry_run: DryRun = False, as_json: Json = False,
    fail_on: FailOn = None,
) -> None:  # fmt: skip
    """Short for 'sweep --latency' with CSIT's defaults: --at 0,10%,50%,90% of the PDR
    of the newest search in --db.

    One-way latency under load as FD.io CSIT reports it: histograms at 0%, 10%, 50% and
    90% of the PDR the newest search in --db found (--at, --of-pdr), or at --rates;
    percentiles per load over the runs. A sweep with --latency, stored (kind sweep),
    assessed and reported like one."""
    shares = {"at": CSIT_SHARES} if given.get("at") is None and given.get("rates") is None else {}
    given = {**given, **shares, "latency": True, "sizes": None}
    run_sweep = inspect.unwrap(sweep)
    run_sweep(ctx, given, dry_run=dry_run, as_json=as_json, fail_on=fail_on)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the sweep and latency commands to the CLI."""
    app.command("sweep")(sweep)
    app.command("latency")(latency)
