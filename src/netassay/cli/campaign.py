"""Commands of campaigns: campaign plan, campaign run, and the worker that runs cells."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from netassay.cli.common import Insecure, TlsDir, tls_dir
from netassay.errors import UsageError
from netassay.store.preflight import check_store

Opt = typer.Option
campaign_app = typer.Typer(
    help="A matrix of configurations: plan it, run it (on Dask), resume it.",
    no_args_is_help=True,
)
FileArg = Annotated[Path, typer.Argument(help="The campaign file (TOML).")]


@campaign_app.command("plan")
def plan(
    file: FileArg,
    db: Annotated[
        str | None,
        Opt(
            "--db", metavar="FILE", help="A store: show the seed recorded there for this campaign."
        ),
    ] = None,
    workers: Annotated[
        int, Opt("--workers", metavar="N", help="Testbeds that run cells side by side.")
    ] = 1,
    as_json: Annotated[
        bool, Opt("--json", help="Print the plan as one JSON object.", metavar="")
    ] = False,
) -> None:
    """Print the campaign resolved: settings, factors, cells, run order and the time."""
    # deferred: the runner (asyncio), when used
    from netassay.campaign import execute, order, spec

    c = spec.load(file)
    seed, origin = execute.seed_for(c, db)
    if as_json:
        sys.stdout.write(json.dumps(order.plan_json(c, seed, origin)) + "\n")
    else:
        typer.echo(order.describe(c, seed, origin, max(1, workers)))


RunDb = Annotated[
    str,
    Opt("--db", metavar="FILE", help="Results store (SQLite); only this process writes it."),
]
Resume = Annotated[
    bool,
    Opt("--resume", help="Continue the campaign in --db: run only what is missing.", metavar=""),
]
Scheduler = Annotated[
    str | None,
    Opt(
        "--scheduler",
        help="A running 'netassay cluster scheduler' (tls://HOST:8786) with netassay "
        "workers; default: an in-process cluster with one worker on this host.",
    ),
]
WorkerName = Annotated[
    str,
    Opt("--name", metavar="NAME", help="Testbed name of the in-process worker (1-8 a-z0-9)."),
]


@campaign_app.command("run")
def run(
    ctx: typer.Context, file: FileArg, db: RunDb, resume: Resume = False,
    scheduler: Scheduler = None, tls: TlsDir = None, insecure: Insecure = False,
    name: WorkerName = "camp",
) -> None:  # fmt: skip
    """Run every cell of the campaign; each cell is one experiment in --db."""
    # deferred: the runner (asyncio), when used
    from netassay.campaign import cluster, execute, spec

    if insecure and scheduler is None:
        raise UsageError("--insecure needs --scheduler", "", "drop it, or name the scheduler")
    check_store(db)  # a store it cannot open or write: refused before any cell is built
    a = cluster.access(scheduler, tls_dir(ctx, tls), insecure, "client") if scheduler else None
    c = spec.load(file)
    result = execute.run_campaign(c, db, resume=resume, scheduler=a, testbed=name)
    if sys.stderr.isatty():
        sys.stderr.write("\n")  # end the progress line
    typer.echo(execute.summary(result))
    execute.check(result, db)


def worker(
    ctx: typer.Context,
    scheduler: Annotated[
        str,
        Opt("--scheduler", help="The scheduler: tls://HOST:8786 ('netassay cluster scheduler')."),
    ],
    name: Annotated[
        str, Opt("--name", metavar="NAME", help="The testbed this worker owns (1-8 a-z0-9).")
    ] = "lab",
    tls: TlsDir = None,
    insecure: Insecure = False,
) -> None:
    """A Dask worker that owns one testbed on this host and runs campaign cells on it: as
    root, so it reaches the scheduler with mutual TLS only (certificates from 'netassay
    cluster certs DIR'); a tcp:// scheduler is refused (--insecure: loopback only)."""
    from netassay.campaign import cluster  # deferred: the runner (asyncio), when used
    from netassay.campaign import worker as campaign_worker

    campaign_worker.serve(cluster.access(scheduler, tls_dir(ctx, tls), insecure, "worker"), name)


def register(app: typer.Typer) -> None:
    """Add the campaign and worker commands to the CLI."""
    app.add_typer(campaign_app, name="campaign")
    app.command("worker")(worker)
