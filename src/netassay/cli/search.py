"""The search command (MLRsearch): its request from the flags, the method run, its result."""

from __future__ import annotations

import inspect
import json
from dataclasses import asdict, replace
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
    prepared,
    progress_line,
    with_params,
)
from netassay.cli.sizes import per_size
from netassay.config import TestbedConfig
from netassay.errors import Interrupted
from netassay.invoke import request_of
from netassay.methods.base import RunOptions
from netassay.methods.search.request import BOTH, RETRIES, RUN_OPTIONS, SearchRequest
from netassay.shared import lab
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
    if per_size(inspect.unwrap(search), ctx, given, "search", as_json, dry_run=dry_run,
                fail_on=fail_on):  # fmt: skip
        return
    method = registry.method("search")
    flags = {k for k, v in given.items() if v is not None}  # typed, not from the file
    given, options = prepared(ctx, given, "search")
    req, options = request_of("search", given, options, flags)
    half = 0.5 if req.bidirectional else 1.0  # --bidirectional: each port carries half
    loads = None if req.max_load_pps is None else (req.max_load_pps * half,)
    name = lab.named_testbed(options.testbed, options.name, options.testbed_flags, loads,
                             "--max-load")  # fmt: skip
    job = method.prepare(req, replace(options, name=name))
    if dry_run:
        if job.resumed is not None:
            typer.echo(f"would resume search {job.experiment_id} in {job.db} on '{job.name}'")
        typer.echo(_dry_run(job, as_json))
        return
    check_fail_on(fail_on)
    job.progress = job.note = progress_line
    try:
        report = method.execute(job)
    except KeyboardInterrupt as exc:  # the testbed is already down when we get here
        raise Interrupted(
            "search interrupted",
            f"{job.stored} trial(s) of it are stored in {job.db}",
            f"continue with 'netassay search --db {job.db} --resume'",
        ) from exc
    _ended(report, as_json, fail_on)


def _ended(report: Any, as_json: bool, fail_on: str | None) -> None:
    """What a search says when it ends; exit 9 when it did not find every goal, and the
    --fail-on gate on its verify sweep's verdict."""
    from netassay.methods.search import view  # deferred: MLRsearch (0.3 s)
    from netassay.methods.search.run import check

    if as_json:
        typer.echo(json.dumps(view.report_json(report), allow_nan=False))
    else:
        typer.echo("\n".join(view.report_lines(report)))
    check(report)
    if report.verify is not None:
        what = f"the verify sweep (experiment {report.verify.experiment_id})"
        gate(fail_on, [(what, report.verify.verdict)])


def _dry_run(job: Any, as_json: bool) -> str:
    from netassay.methods.search import view  # deferred: MLRsearch (0.3 s)
    from netassay.shared import search_engine as engine  # deferred: MLRsearch

    nominal = job.max_load_pps or max(600_000.0, 2 * (job.min_load_pps or 0))
    spec = job.spec(nominal)
    est = engine.estimate(spec)
    if as_json:
        obj = {
            "testbed": job.name, "db": job.db, "knobs": asdict(job.testbed),
            "max_load_is_peak": job.max_load_pps is None, "spec": spec.to_json(),
            "worst_case": asdict(est), "verify": asdict(job.verify) if job.verify else None,
            "worst_case_is": "an estimate from simulated SUTs; the time cap is the bound",
            "bidirectional": job.bidirectional,
        }  # fmt: skip
        return json.dumps(obj)
    knobs = ", ".join(f"{k}={v}" for k, v in asdict(job.testbed).items() if v is not None)
    lines = [f"testbed '{job.name}': {knobs}", f"store: {job.db}"]
    lines += view.dry_run_lines(spec, est, job.max_load_pps is None, job.settle_s)
    lines += view.verify_plan_lines(job.verify, job.settle_s)
    if job.bidirectional:
        lines.append(f"{BOTH} (the verify sweep's too)")
    return "\n".join(lines)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the search command to the CLI."""
    app.command("search")(search)
