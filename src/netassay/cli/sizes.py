"""``--sizes``: one command run once per frame size (sweep, search, flood), then the
series' RFC 2544 table (``shared.sizes``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer

from netassay import methods as registry
from netassay import names
from netassay.cli.common import Given, err, newest_experiment, prepared
from netassay.cli.scale import per_scale
from netassay.config import AnalysisConfig, Config
from netassay.errors import Interrupted, NetassayError, UsageError
from netassay.shared import lab
from netassay.shared.scale import KNOBS, is_list
from netassay.shared.sizes import parse_sizes, series_in, table_text
from netassay.store.db import Store
from netassay.testbed import state


def per_size(command: Callable[..., None], ctx: typer.Context, given: Given, method: str,
             as_json: bool, **kv: Any) -> bool:  # fmt: skip
    """Run ``command`` (a command's own function, undecorated) once per size of
    ``--sizes`` with everything else as given, each size's result stored and shown as
    it ends, then the series' table; False when no ``--sizes`` was given. A size that
    fails is said and the series goes on; its error ends the command after the table."""
    if not given.get("sizes"):  # a scale knob's list, if one was given (cli.scale)
        return per_scale(command, ctx, given, method, as_json, **kv)
    _refuse_with_sizes(given)
    _, options = prepared(ctx, dict(given), method)
    cfg = options.config or Config()
    ip = options.testbed_flags.get("ip_version") or cfg.testbed.ip_version
    sizes = parse_sizes(given["sizes"], int(ip))
    named = given.get("name") is not None
    _refuse_up(options.seen, options.name or names.DEFAULT_NAME, sizes, named)
    db = lab.store_path(options.db)
    dry = bool(kv.get("dry_run"))
    since = 0 if dry else newest_experiment(db)
    failed: NetassayError | None = None
    for i, size in enumerate(sizes, 1):
        err(f"frame size {size} B ({i}/{len(sizes)} of the series)")
        try:
            command(ctx=ctx, given={**given, "sizes": None, "size": size, "db": db},
                    as_json=as_json, **kv)  # fmt: skip
        except Interrupted:
            raise
        except NetassayError as exc:  # said; the next size goes on
            err(f"netassay: frame size {size} B: {exc.line()}")
            failed = failed or exc
    if not dry:
        _table(db, since, cfg.analysis, as_json)
    if failed is not None:
        raise failed
    return True


def _refuse_with_sizes(given: Given) -> None:
    for knob, (flag, _) in KNOBS.items():
        if is_list(given.get(knob)):
            raise UsageError(
                f"--sizes with a {flag} list", "a series varies one thing",
                f"drop --sizes or give {flag} one value",
            )  # fmt: skip
    keys = (
        ("size", "--size"),
        ("imix", "--imix"),
        ("pcap", "--pcap"),
        ("resume", "--resume"),
        ("testbed", "--testbed"),
    )
    for key, flag in keys:
        if given.get(key):
            raise UsageError(
                f"--sizes with {flag}",
                "a series runs each of its sizes on a testbed it builds for that size",
                f"drop {flag} (or --sizes)",
            )


def _refuse_up(seen: state.Seen, name: str, sizes: list[int], named: bool) -> None:
    """A series on a testbed that is up (``testbed up``) is refused before its first
    size: the testbed's frame size is its own, and a series needs a testbed per size,
    which a run builds and removes itself; it never takes down one it did not build.
    ``named``: the name came from --name (else the config file or the default); ``seen``:
    the states the run has read."""
    st = seen.read(name)
    if st is None:
        return
    have = (st.get("config") or {}).get("size_bytes")
    if set(sizes) <= {have}:
        return  # a series of the testbed's own size alone runs on it as it is
    if st.get("persistent") is not True:  # a run's own testbed, being built or used
        raise UsageError(
            f"--sizes on testbed '{name}', which another netassay run is using",
            "a series builds a testbed of its name for each size",
            "wait for that run to end, or give --name of another testbed",
        )
    todo = (
        "leave --name off (the series builds a testbed for each size and removes it)"
        if named else
        "give --name of a testbed that is not up (the series builds it for each size and "
        "removes it)"
    )  # fmt: skip
    raise UsageError(
        f"--sizes on testbed '{name}', which is up with {have}-byte frames",
        "a series needs a testbed for each of its sizes, and netassay does not take down "
        "a testbed that 'testbed up' left for you",
        f"{todo}, or bring it down first ('netassay testbed down --name {name}')",
    )


def _table(db: str, since: int, cfg: AnalysisConfig, as_json: bool) -> None:
    with Store(db, readonly=True) as st:
        found = series_in(st, cfg, registry.of_kind, since)
    for s in found:
        typer.echo(json.dumps(s.as_json(), allow_nan=False) if as_json else table_text(s))
