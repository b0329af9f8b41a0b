"""The tcp command: TCP throughput over the embedded path of a known delay, loss and
rate, with the bounds of seed 003 beside it."""

from __future__ import annotations

import typer

from netassay import names
from netassay.cli.common import NOT_STORED, Given, Json, runs_with, with_params
from netassay.errors import Interrupted
from netassay.methods.base import RunOptions
from netassay.methods.tcp.method import METHOD
from netassay.methods.tcp.request import RUN_OPTIONS, TcpRequest


@with_params(
    TcpRequest, RunOptions, only=RUN_OPTIONS, shown={"name": names.TCP_NAME}, helps=NOT_STORED
)
def tcp(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Measure TCP throughput (iperf3) over a path built here: client, path, server,
    with a known one-way --delay (netem where the kernel has it, else netassay-gen's
    delay line), random --loss of the data segments and a --bottleneck rate. Each run
    reports the window the receiver advertised (read back), the retransmits, the CPU per
    core, and the bound that holds it: Mathis et al.'s MSS/RTT x C/sqrt(p), the window's
    W/RTT or the path's rate. With --db each run is stored as it ends (kind tcp)."""
    req, options = runs_with(ctx, given, "tcp")
    req.validate()
    show = (lambda line: None) if as_json else (lambda line: typer.echo(f"tcp: {line}", err=True))
    try:
        result = METHOD.run(req, options, show)
    except KeyboardInterrupt as exc:  # each run is stored as it ends
        where = f"runs that ended are stored in {options.db}" if options.db else "nothing stored"
        raise Interrupted("tcp interrupted", where) from exc
    typer.echo(METHOD.view(result, as_json))


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the tcp command to the CLI."""
    app.command("tcp")(tcp)
