"""The doctor command: is this host fit to measure, and up to what load?"""

from __future__ import annotations

import typer

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
from netassay.config import DATAPLANE_KNOBS, TestbedConfig
from netassay.methods.base import RunOptions
from netassay.methods.doctor.method import METHOD
from netassay.methods.doctor.request import NAME, OWN_KNOBS, RUN_OPTIONS, DoctorRequest

# taken, not listed: the doctor builds its own router, cap and drop testbeds (a data
# plane's knobs given to it are refused as given to a router, testbed.dataplane)
NOT_TAKEN = (
    *OWN_KNOBS, "sut_cap", "sut_cap_reverse",
    *sorted({k for knobs in DATAPLANE_KNOBS.values() for k in knobs}),
)  # fmt: skip


@with_params(
    DoctorRequest, RunOptions, TestbedConfig, only=RUN_OPTIONS, shown={"name": NAME, "db": STORE},
    hide=NOT_TAKEN,
)  # fmt: skip
def doctor(ctx: typer.Context, given: Given, as_json: Json = False, fail_on: FailOn = None) -> None:
    """Check whether this host can measure, and up to what load: its settings (CPU
    steal, governor, SMT, mitigations, isolcpus, irqbalance, NAPI/GRO, clock source,
    timer slack), how often its CPUs are taken away, the generator's pacing, peak and
    reach, false loss at a low load, the kernel router's MRR (flood), and a
    ground-truth cap and drop measured against their truth. PASS / WARN / FAIL per
    check with the figure and the fix, a verdict and the load range a sweep can trust
    here now. About a minute (--quick: under 20 s); stored as kind doctor in --db."""
    check_fail_on(fail_on)
    req, options = runs_with(ctx, given, "doctor")
    result = METHOD.run(req, options, progress_line)
    typer.echo(METHOD.view(result, as_json))
    gate(fail_on, [METHOD.judged(result)])


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the doctor command to the CLI."""
    app.command("doctor")(doctor)
