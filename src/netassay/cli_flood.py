"""CLI of the flood: a router's maximum forwarding rate (netassay.methods.flood.run)."""

from __future__ import annotations

import json
import statistics
from typing import Annotated, Any

import typer

from netassay.cli_lab import testbed_flags
from netassay.errors import UsageError

Opt = typer.Option
FLOOD_SUTS = ("router", "xdp-router")
MAX_RUNS = 100


@testbed_flags
def flood(
    duration: Annotated[str, Opt("--duration", help="Length of each flood, e.g. 2s.")] = "2s",
    runs: Annotated[int, Opt("--runs", help="Floods, one after the other.")] = 3,
    name: Annotated[str, Opt("--name", help="Testbed name (used as it is when up).")] = "lab",
    as_json: Annotated[bool, Opt("--json", help="Print one JSON object.")] = False,
    flags: dict[str, Any] | None = None,
) -> None:
    """Offer the SUT far more than it can forward (XDP live frames at the generator's
    peak) and report what it forwards: its maximum forwarding rate (RFC 2285), with
    every frame it could not take located. A router SUT (kernel or XDP); stores
    nothing."""
    from netassay.cli_lab import _config
    from netassay.methods.flood.run import flood as one_flood
    from netassay.methods.flood.run import flood_path
    from netassay.methods.sweep import run as SW
    from netassay.testbed import require_root, validate_name
    from netassay.testbed import state as S
    from netassay.testbed import topology as T
    from netassay.testbed.bed import config_from_state
    from netassay.trial.engine import trials_on
    from netassay.units import parse_duration

    validate_name(name)
    secs = parse_duration(duration)
    if not 1 <= runs <= MAX_RUNS:
        raise UsageError(f"--runs {runs} is out of range", "", f"give 1 to {MAX_RUNS}")
    st = S.read_state(name)
    if st is not None and T.kind_of(st) != T.FORWARDING:
        raise UsageError(
            f"testbed '{name}' is a {T.kind_of(st)} testbed",
            "a flood runs on a router testbed netassay built",
            "give another --name, or bring that one down",
        )
    cfg = config_from_state(st) if st is not None and not flags else _config(flags or {}).testbed
    T.validate(cfg)
    if cfg.sut not in FLOOD_SUTS:
        raise UsageError(
            f"a flood needs a router SUT, not '{cfg.sut}'",
            "only a router's ingress takes the generator's XDP frames here",
            "use --sut router or --sut xdp-router",
        )
    if cfg.sink == "nft":
        raise UsageError(
            "a flood needs the XDP sink", "nft counts too slowly for a flood", "use --sink xdp"
        )
    require_root("a flood")
    floods = []
    with (
        SW.open_named(name, cfg, "a flood") as tb,
        trials_on(tb) as ctx,
        flood_path(tb) as changed,
    ):
        for i in range(runs):
            f = one_flood(ctx, secs)
            floods.append(f)
            if not as_json:
                typer.echo(_line(i, f))
    mfr = statistics.median(f["forwarded_pps"] for f in floods)
    if as_json:
        out = {"testbed": name, "sut": cfg.sut, "pinning": cfg.pinning,
               "size_bytes": cfg.size_bytes, "changed_while_flooding": changed,
               "floods": floods, "max_forwarding_rate_pps": mfr,
               "lower_bound": not all(f["saturated"] for f in floods)}  # fmt: skip
        typer.echo(json.dumps(out, sort_keys=True))
        return
    unsat = sum(not f["saturated"] for f in floods)
    bound = f" (lower bound: {unsat} of {runs} not saturated)" if unsat else ""
    typer.echo(f"{cfg.sut}: maximum forwarding rate {mfr / 1e6:.3f} Mpps (median of {runs}){bound}")


def _line(i: int, f: dict[str, Any]) -> str:
    where = ", ".join(f"{k} {v:,}" for k, v in f["loss_location"].items()) or "nowhere"
    return (
        f"flood {i + 1}: offered {f['offered_pps'] / 1e6:.3f} Mpps, forwarded "
        f"{f['forwarded_pps'] / 1e6:.3f} Mpps ({f['forwarded']:,} of {f['sent']:,}); "
        f"lost at {where}" + ("" if f["saturated"] else " (not saturated)")
    )


def register(app: typer.Typer) -> None:
    """Add the flood command to the CLI."""
    app.command("flood")(flood)
