"""The trend command: each stored configuration's results in time (or by a factor such
as the kernel), split into groups by CSIT's jumpavg, each change a regression or a
progression; ``--fail-on-regression`` gates a CI job on the newest group."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from netassay.analysis.trend import THRESHOLD
from netassay.cli.common import DbOpt, Json, OldDbArg, config_path, store_given
from netassay.config import load_config
from netassay.errors import RegressionFound, UsageError
from netassay.report import series
from netassay.store.paths import open_store

Metric = Annotated[
    str | None,
    typer.Option(
        "--metric",
        metavar="NAME",
        help="The figure to follow: pdr, ndr (sweep, search), mrr (flood), rtt_p50, rtt_p99 "
        "(rtt), throughput, loss (accept); by default each method's first (PDR, MRR, RTT p50).",
    ),
]
By = Annotated[
    str,
    typer.Option(
        "--by",
        metavar="NAME",
        help="Order each series by this instead of time: kernel, version (netassay's), or a "
        "recorded setting or campaign factor; it is then not part of a configuration.",
    ),
]
All = Annotated[
    bool,
    typer.Option(
        "--all", help="Judge BAD and INCONCLUSIVE results too (drawn, marked, left out by "
        "default).", metavar="",
    ),
]  # fmt: skip
Threshold = Annotated[
    str,
    typer.Option(
        "--threshold",
        metavar="RATIO",
        help="A regression this large or more fails the gate: 5% or 0.05.",
    ),
]
FailOnRegression = Annotated[
    bool,
    typer.Option(
        "--fail-on-regression", metavar="",
        help="Exit 1 when a series' newest group is a regression beyond --threshold.",
    ),
]  # fmt: skip


def trend(
    ctx: typer.Context, old_db: OldDbArg = None, db: DbOpt = None, metric: Metric = None,
    by: By = series.TIME, all_: All = False,
    threshold: Threshold = f"{THRESHOLD:.0%}", fail_on_regression: FailOnRegression = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """Regressions and progressions of each configuration over time (jumpavg's groups,
    each with its average and spread; each change with its relative size). Only
    trustworthy results are judged: faulty trials never, BAD or INCONCLUSIVE sweeps only
    with --all. Exit 1 with --fail-on-regression when a newest group is a regression of
    --threshold (default 5%) or more."""
    db = store_given(ctx, db, old_db)
    share = parse_threshold(threshold)
    cfg = load_config(config_path(ctx)).analysis
    with open_store(db) as st:
        found = series.series(st, metric, by, all_, cfg)
    # each series whose newest group regressed beyond ``share``, with that group
    failing = [
        (s, newest)
        for s in found
        if s.trend.regression_beyond(share) and (newest := s.trend.newest) is not None
    ]
    if as_json:
        typer.echo(json.dumps(series.as_json(found, db, metric, by, share, all_), indent=2))
    else:
        typer.echo("\n".join(line for s in found for line in [*series.text(s, share), ""]).rstrip())
    if fail_on_regression and failing:
        said = "; ".join(f"series {s.id} ('{s.label}') {g.size()}" for s, g in failing)
        raise RegressionFound(
            f"--fail-on-regression: {len(failing)} series regressed beyond {share:.1%}",
            said, "the trend is shown above",
        )  # fmt: skip


def parse_threshold(text: str) -> float:
    """``5%`` or ``0.05``: a share between 0 and 1."""
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        share = -1.0
    if not 0 <= share < 1:
        raise UsageError(f"bad --threshold '{text}'", "a share from 0 to 1", "e.g. 5% or 0.05")
    return share


def register(app: typer.Typer) -> None:
    """Add the trend command to the CLI."""
    app.command("trend")(trend)
