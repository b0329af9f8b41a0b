"""The flood command: a router's maximum forwarding rate (RFC 2285)."""

from __future__ import annotations

import inspect

import typer

from netassay import names
from netassay.cli.common import NOT_STORED, Given, Json, runs_with, with_params
from netassay.cli.series import per_value
from netassay.config import TestbedConfig
from netassay.methods.base import RunOptions
from netassay.methods.flood.method import METHOD
from netassay.methods.flood.request import FloodRequest
from netassay.shared.series_plan import Series
from netassay.shared.sizes import SizesFlag


@with_params(
    FloodRequest, RunOptions, TestbedConfig, SizesFlag, only=METHOD.run_options,
    shown={"name": names.DEFAULT_NAME},
    helps={**NOT_STORED,
           "sut": "router (kernel IP forwarding) | xdp-router (XDP forwarding) | ovs | testpmd | "
                  "l3fwd (their AF_XDP ports): an ingress that takes XDP frames."},
    metavars={"sut": "router|xdp-router|ovs|testpmd|l3fwd"},
)  # fmt: skip
def flood(ctx: typer.Context, given: Given, as_json: Json = False) -> None:
    """Offer the SUT far more than it can forward (XDP live frames at the generator's
    peak) and report what it forwards: its maximum forwarding rate (RFC 2285), with
    every frame it could not take located. A router SUT (kernel or XDP). With --db
    each flood is stored as it ends (kind mrr: its maximum receive rate), which assess,
    compare, export and report read."""
    run = runs_with(ctx, given, "flood", series=True)
    if isinstance(run, Series):  # --sizes, or a scale knob's list: a flood per value
        return per_value(run, inspect.unwrap(flood), ctx, as_json)
    req, options = run
    show = (lambda line: None) if as_json else typer.echo
    result = METHOD.run(req, options, show)
    typer.echo(METHOD.view(result, as_json))


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the flood command to the CLI."""
    app.command("flood")(flood)
