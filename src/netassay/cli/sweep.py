"""The sweep command: its request from the flags, the method run, its result printed."""

from __future__ import annotations

import inspect
from dataclasses import asdict

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
    prepared,
    progress_line,
    with_params,
)  # fmt: skip
from netassay.cli.sizes import per_size
from netassay.config import Config, TestbedConfig
from netassay.errors import Interrupted, UsageError
from netassay.invoke import request_of
from netassay.methods.base import RunOptions
from netassay.methods.sweep.request import RUN_OPTIONS, SweepRequest
from netassay.params import declared
from netassay.shared import lab
from netassay.shared.sizes import SizesFlag
from netassay.shared.sweep_plan import describe
from netassay.shared.sweep_run import RETRIES, Sweep
from netassay.store.db import Store


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
    if per_size(inspect.unwrap(sweep), ctx, given, "sweep", as_json, dry_run=dry_run,
                fail_on=fail_on):  # fmt: skip
        return
    if given.get("at") is not None and given.get("rates") is not None:
        raise UsageError("--at with --rates", "--at picks the loads itself", "drop one of them")
    method = registry.method("sweep")
    if given["resume"]:  # the stored plan and label: a flag changing them is refused
        keys = [p.flag for _, p in declared(SweepRequest) if given.get(p.name) is not None]
        lab.refuse_with_resume(keys + (["--label"] if given["label"] else []), "sweep")
    flags = {k for k, v in given.items() if v is not None}  # typed, not from the file
    given, options = prepared(ctx, given, "sweep")
    req, options = request_of("sweep", given, options, flags)
    name = lab.named_testbed(options.testbed, options.name, options.testbed_flags,
                             req.rates_pps if given.get("rates") is not None else None)  # fmt: skip
    sw = method.prepare(req, RunOptions(**{**options.__dict__, "name": name}))
    if dry_run:
        typer.echo(_dry_run(sw, options.resume))
        return
    check_fail_on(fail_on)
    sw.progress, sw.note = bar(sw.plan.count()), progress_line
    try:
        method.execute(sw)
    except KeyboardInterrupt as exc:  # the testbed is already down when we get here
        raise Interrupted(
            "sweep interrupted",
            f"{sw.stored} trial(s) of this run are stored in {sw.db}",
            f"continue with 'netassay sweep --db {sw.db} --resume'",
        ) from exc
    err("")
    assert options.config is not None  # prepared() reads the config in force
    _ended(sw, options.config, as_json, fail_on)


def _ended(sw: Sweep, cfg: Config, as_json: bool, fail_on: str | None) -> None:
    """What a sweep says when it ends: where it stored what, its verdict and bounds (or
    the assess object with --json), and the --fail-on gate on its verdict."""
    stored = f"stored {sw.stored} trial(s) in {sw.db} (experiment {sw.experiment_id})"
    typer.echo(stored, err=as_json)  # with --json, stdout holds the JSON object alone
    method = registry.method("sweep")
    a = method.assessed(sw, cfg.analysis)
    if a is None:
        return
    # deferred: the sweep's view loads scipy's statistics, only an analysis needs them
    from netassay.methods.sweep.view import ended

    text, lines = ended(sw, a, method.view(a, True))
    typer.echo(text if as_json else "\n".join(lines))
    gate(fail_on, [method.judged(a)])


def _dry_run(sw: Sweep, resume: bool) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in asdict(sw.testbed).items() if v is not None)
    done: set[tuple[int, int]] = set()
    if resume:
        assert sw.experiment_id is not None  # a resumed sweep has its experiment
        with Store(sw.db, create=False) as st:
            done = st.done_trials(sw.experiment_id)
    where = f" (resuming experiment {sw.experiment_id})" if resume else ""
    both = (
        [f"--bidirectional: each load per direction, both at once ({2 * sw.plan.packets():,} "
         "packets in all); stored and assessed as their aggregate, twice each load"]
        if sw.bidirectional else []
    )  # fmt: skip
    return "\n".join(
        [f"testbed '{sw.name}': {knobs}", f"store: {sw.db}{where}", describe(sw.plan, done), *both]
    )


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
