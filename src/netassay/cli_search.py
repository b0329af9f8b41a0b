"""CLI of the NDR/PDR search (MLRsearch): parses flags and delegates to netassay.methods.search."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from netassay.cli_lab import TestbedOpt, testbed_flags
from netassay.errors import Interrupted

Opt = typer.Option


@testbed_flags
def search(
    goal: Annotated[
        list[str] | None,
        Opt("--goal", help="ndr | pdr | pdr:RATIO (repeat; default: ndr and pdr:0.005)."),
    ] = None,
    min_load: Annotated[
        str | None, Opt("--min-load", help="Lowest load tried [1% of the max].")
    ] = None,
    max_load: Annotated[
        str | None,
        Opt("--max-load", help="Highest load tried, e.g. 600k [98% of the generator's peak]."),
    ] = None,
    exceed_ratio: Annotated[
        float | None,
        Opt("--exceed-ratio", help="Share of trial time above the goal loss at a lower bound."),
    ] = None,
    width: Annotated[
        str | None, Opt("--width", help="Relative width of the final bounds [0.5%].")
    ] = None,
    initial_duration: Annotated[
        str | None, Opt("--initial-duration", help="Shortest trial [1s].")
    ] = None,
    final_duration: Annotated[
        str | None, Opt("--final-duration", help="Longest (full-length) trial [1s].")
    ] = None,
    duration_sum: Annotated[
        str | None, Opt("--duration-sum", help="Trial time that classifies a load [21s].")
    ] = None,
    time_cap: Annotated[
        str | None, Opt("--time-cap", help="Stop the search after this long [20m].")
    ] = None,
    settle: Annotated[str | None, Opt("--settle", help="Pause between trials [0].")] = None,
    db: Annotated[str | None, Opt("--db", help="Results store (SQLite).")] = None,
    as_json: Annotated[bool, Opt("--json", help="Print the result as one JSON object.")] = False,
    dry_run: Annotated[
        bool, Opt("--dry-run", help="Print the goals, bounds and worst-case time; run nothing.")
    ] = False,
    then_verify: Annotated[
        bool,
        Opt("--then-verify", help="Then a PASTRAMI sweep around the PDR found, and its verdict."),
    ] = False,
    verify_runs: Annotated[int, Opt("--verify-runs", help="K of the verify sweep.")] = 5,
    verify_duration: Annotated[
        str | None, Opt("--verify-duration", help="Trial length of the verify sweep [final].")
    ] = None,
    verify_span: Annotated[
        float, Opt("--verify-span", help="Verify loads from (1-span) to (1+span) x the PDR.")
    ] = 0.2,
    verify_loads: Annotated[int, Opt("--verify-loads", help="Loads of the verify sweep.")] = 9,
    label: Annotated[str, Opt("--label", help="Experiment label.")] = "",
    no_peak_check: Annotated[
        bool, Opt("--no-peak-check", help="Skip the generator peak probe (needs --max-load).")
    ] = False,
    retries: Annotated[
        int,
        Opt(
            "--retries",
            help="Repeat a trial that is a measurement fault; still one after these, the "
            "search stops (it needs every answer).",
        ),
    ] = 4,
    resume: Annotated[
        bool, Opt("--resume", help="Continue an unfinished search in --db (the newest).")
    ] = False,
    experiment: Annotated[
        int | None, Opt("--experiment", help="With --resume: the search's experiment id.")
    ] = None,
    name: Annotated[
        str | None, Opt("--name", help="Testbed name [lab]; a resume uses the search's own.")
    ] = None,
    flags: dict[str, Any] | None = None,
    testbed: TestbedOpt = None,
) -> None:
    """Find NDR and PDR with MLRsearch (FD.io CSIT); each trial is stored as it ends."""
    from netassay.cli import config_path
    from netassay.methods.search import run as R
    from netassay.methods.search.spec import GoalOptions, parse_ratio
    from netassay.methods.sweep.run import named_testbed
    from netassay.units import parse_duration

    o = flags or {}
    name = named_testbed(testbed, name, o, ("--max-load", max_load))
    dur = {
        k: parse_duration(v) if v is not None else None
        for k, v in (("i", initial_duration), ("f", final_duration), ("s", duration_sum))
    }
    goals = GoalOptions(
        tuple(goal or ()), exceed_ratio, parse_ratio(width, "--width") if width else None,
        dur["i"], dur["f"], dur["s"],
    )  # fmt: skip
    verify = R.VerifyPlan(
        verify_runs,
        parse_duration(verify_duration) if verify_duration else (dur["f"] or 1.0),
        verify_span,
        verify_loads,
    )
    req = R.SearchRequest(
        goals, min_load, max_load, time_cap, settle, db, name, label, not no_peak_check,
        retries, then_verify, verify, o, resume, experiment,
    )  # fmt: skip
    job = R.prepare(req, config_path())
    if dry_run:
        if job.resumed is not None:
            typer.echo(f"would resume search {job.experiment_id} in {job.db} on '{job.name}'")
        _dry_run(job, as_json)
        return
    job.progress = _progress
    try:
        report = R.run(job)
    except KeyboardInterrupt as exc:  # the testbed is already down when we get here
        raise Interrupted(
            "search interrupted",
            f"{job.stored} trial(s) of it are stored in {job.db}",
            f"continue with 'netassay search --db {job.db} --resume'",
        ) from exc
    from netassay.methods.search import view

    if as_json:
        sys.stdout.write(json.dumps(view.report_json(report), allow_nan=False) + "\n")
    else:
        typer.echo("\n".join(view.report_lines(report)))
    R.check(report)


def _dry_run(job, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import asdict

    from netassay.methods.search import engine as E
    from netassay.methods.search import view

    nominal = job.max_load_pps or max(600_000.0, 2 * (job.min_load_pps or 0))
    spec = job.spec(nominal)
    est = E.estimate(spec)
    if as_json:
        obj = {
            "testbed": job.name, "db": job.db, "knobs": asdict(job.testbed),
            "max_load_is_peak": job.max_load_pps is None, "spec": spec.to_json(),
            "worst_case": asdict(est), "verify": asdict(job.verify) if job.verify else None,
        }  # fmt: skip
        sys.stdout.write(json.dumps(obj) + "\n")
        return
    knobs = ", ".join(f"{k}={v}" for k, v in asdict(job.testbed).items() if v is not None)
    typer.echo(f"testbed '{job.name}': {knobs}")
    typer.echo(f"store: {job.db}")
    typer.echo("\n".join(view.dry_run_lines(spec, est, job.max_load_pps is None, job.settle_s)))
    if job.verify:
        v = job.verify
        n = v.loads * v.runs
        typer.echo(
            f"then verify: a PASTRAMI sweep of {v.loads} loads from {1 - v.span:g}x to "
            f"{1 + v.span:g}x the PDR found, {v.runs} runs of {v.duration_s:g} s: {n} trials, "
            f"about {n * (v.duration_s + 0.8 + job.settle_s):.0f} s"
        )


def _progress(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def register(app: typer.Typer) -> None:
    """Add the search command to the CLI."""
    app.command("search")(search)
