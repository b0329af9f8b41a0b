"""``--routes``, ``--nft-rules`` or ``--flows`` given a list (``1,1k,100k,1M``): one
command run once per value (sweep, search, flood), then the series' table
(``shared.scale``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer

from netassay import methods as registry
from netassay.cli.common import Given, err, newest_experiment, prepared
from netassay.config import Config
from netassay.errors import Interrupted, NetassayError, UsageError
from netassay.shared import lab
from netassay.shared.scale import KNOBS, is_list, parse_list, series_in, table_text
from netassay.store.db import Store


def _listed(given: Given) -> tuple[str, str] | None:
    """The one scale knob given a list, and its flag (None: none is); a UsageError for
    two lists, or for a list with --resume or --testbed."""
    lists = [k for k in KNOBS if is_list(given.get(k))]
    if not lists:
        return None
    flags = [KNOBS[k][0] for k in lists]
    if len(lists) > 1:
        raise UsageError(
            f"{' and '.join(flags)} are both lists", "a scale series varies one knob",
            "give a list to one of them",
        )  # fmt: skip
    for key, other in (("resume", "--resume"), ("testbed", "--testbed")):
        if given.get(key):
            raise UsageError(
                f"{flags[0]} list with {other}",
                "a series runs each of its values on a testbed it builds for that value",
                f"drop {other} (or give {flags[0]} one value)",
            )
    return lists[0], flags[0]


def per_scale(command: Callable[..., None], ctx: typer.Context, given: Given, method: str,
              as_json: bool, **kv: Any) -> bool:  # fmt: skip
    """Run ``command`` (a command's own function, undecorated) once per value of the one
    scale knob given as a list, everything else as given, each value's result stored and
    shown as it ends, then the series' table; False when no knob was given a list. A
    value that fails is said and the series goes on; its error ends the command after
    the table."""
    listed = _listed(given)
    if listed is None:
        return False
    knob, flag = listed
    values = parse_list(str(given[knob]), flag)
    _, options = prepared(ctx, {**given, knob: str(values[0])}, method)
    cfg = options.config or Config()
    db = options.db or lab.DEFAULT_DB
    dry = bool(kv.get("dry_run"))
    since = 0 if dry else newest_experiment(db)
    failed: NetassayError | None = None
    for i, value in enumerate(values, 1):
        err(f"{flag} {value:,} ({i}/{len(values)} of the series)")
        try:
            command(ctx=ctx, given={**given, knob: str(value), "db": db}, as_json=as_json, **kv)
        except Interrupted:
            raise
        except NetassayError as exc:  # said; the next value goes on
            err(f"netassay: {flag} {value:,}: {exc.line()}")
            failed = failed or exc
    if not dry:
        with Store(db, readonly=True) as st:
            found = [
                s for s in series_in(st, cfg.analysis, registry.of_kind, since) if s.knob == knob
            ]
        for s in found:
            typer.echo(json.dumps(s.as_json(), allow_nan=False) if as_json else table_text(s))
    if failed is not None:
        raise failed
    return True
