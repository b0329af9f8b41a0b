"""The batching command: what the receiver sees of a paced train (seed 003, 3.4)."""

from __future__ import annotations

import typer

from netassay.cli.common import STORE, Given, Json, progress_line, runs_with, with_params
from netassay.methods.base import RunOptions
from netassay.methods.batching.method import METHOD
from netassay.methods.batching.request import NAME, RUN_OPTIONS, BatchingRequest


@with_params(BatchingRequest, RunOptions, only=RUN_OPTIONS, shown={"name": NAME, "db": STORE})
def batching(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Packet batching at the receiver (seed 003, 3.4): paced ICMP probes over the rtt
    testbed, stamped at the sender's egress and the receiver's ingress (tc BPF); per run
    the gaps against the sent spacing, the share in bursts, burst lengths and the wait
    for the batch. --gro, --flush (gro_flush_timeout), --defer (napi_defer_hard_irqs)
    and --threaded set the receiver's veth inside the testbed (removed with it)."""
    req, options = runs_with(ctx, given, "batching")
    show = (lambda line: None) if as_json else progress_line
    result = METHOD.run(req, options, show)  # Interrupted: the runs stored
    typer.echo(METHOD.view(result, as_json))


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the batching command to the CLI."""
    app.command("batching")(batching)
