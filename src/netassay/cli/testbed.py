"""Commands of the testbed: up, down, cleanup, show, external."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from netassay.cli.common import Given, config, with_params
from netassay.config import TestbedConfig
from netassay.names import validate_name
from netassay.testbed import external, show, topology
from netassay.testbed import state as testbed_state
from netassay.testbed.bed import Testbed, require_root

lab_app = typer.Typer(help="Build, inspect and remove the embedded testbed.", no_args_is_help=True)

NameOpt = Annotated[
    str,
    typer.Option("--name", metavar="NAME", help="Testbed name: 1-8 lower-case letters or digits."),
]
TbArg = Annotated[
    str | None, typer.Argument(help="Testbed name (the same as --name).", show_default=False)
]
SizeOpt = Annotated[int | None, typer.Option("--size", help="Frame size in bytes (no FCS).")]
FlowsOpt = Annotated[int | None, typer.Option("--flows", help="Number of UDP flows.")]


@lab_app.command("up")
@with_params(TestbedConfig)
def testbed_up(ctx: typer.Context, given: Given, name: NameOpt = "lab") -> None:
    """Build a testbed that stays up (use it with 'sweep --name'); prints its name."""
    validate_name(name)
    cfg = config(ctx, given).testbed
    topology.validate(cfg)
    with Testbed(name, cfg, keep=True):
        pass
    typer.echo(name)


@lab_app.command("down")
def testbed_down(tb: TbArg = None, name: NameOpt = "lab") -> None:
    """Remove a testbed: its namespaces, state and any sysctl it changed (an external
    testbed is forgotten: its ports are left as they are)."""
    name = tb or name
    validate_name(name)
    require_root("removing a testbed")
    with testbed_state.Lock(name):
        external = topology.kind_of(testbed_state.read_state(name) or {}) == "external"
        removed = topology.teardown(name)
    if external:
        typer.echo(f"forgot external testbed '{name}' (its ports are left as they were)")
        return
    typer.echo(f"removed {len(removed)} namespace(s) of testbed '{name}'")


@lab_app.command("cleanup")
def testbed_cleanup(
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="NAME", help="Only this testbed (default: every na-*)."),
    ] = None,
) -> None:
    """Remove every na-* namespace and testbed state left behind; restore sysctls."""
    if name is not None:
        validate_name(name)
    require_root("cleanup")
    removed = topology.cleanup({name} if name else None)
    typer.echo(
        f"removed {len(removed)} namespace(s)" + (f": {' '.join(removed)}" if removed else "")
    )


@lab_app.command("show")
def testbed_show(
    tb: TbArg = None,
    name: NameOpt = "lab",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.", metavar="")] = False,
) -> None:
    """Print a testbed's topology, knobs and environment."""
    info = show.describe(tb or name)
    typer.echo(json.dumps(info, indent=2, sort_keys=True) if as_json else show.render(info))


Tx = Annotated[str, typer.Option("--tx", help="Local port the generator sends on.")]
Rx = Annotated[str, typer.Option("--rx", help="Local port the sink counts on.")]
DstMac = Annotated[
    str, typer.Option("--dst-mac", help="The SUT's MAC on the tx side (frames go there).")
]
Src = Annotated[str, typer.Option("--src", help="Source address, e.g. 198.18.0.2.")]
Dst = Annotated[str, typer.Option("--dst", help="Destination, e.g. 198.19.0.2.")]
Netns = Annotated[
    str | None,
    typer.Option("--netns", help="Network namespace of both ports (default: the host's own)."),
]
ExpectMac = Annotated[
    str | None,
    typer.Option("--expect-mac", help="MAC the probes must come back to (default: the rx port's)."),
]
AnyDst = Annotated[
    bool,
    typer.Option(
        "--allow-any-destination",
        help="Allow a --dst outside 198.18.0.0/15 and 2001:2::/48 (test traffic to it).",
        metavar="",
    ),
]
SutCmd = Annotated[
    str | None,
    typer.Option(
        "--sut-counters-cmd",
        help="Command printing the SUT's counters ('name value' lines or JSON), run "
        "before and after each trial, e.g. 'ssh r1 nstat -az'.",
    ),
]
Cpu = Annotated[
    int | None, typer.Option("--cpu", help="Pin the generator to this CPU (default: not).")
]
StateJson = Annotated[bool, typer.Option("--json", help="Print the state as JSON.", metavar="")]


@lab_app.command("external")
def testbed_external(tx: Tx, rx: Rx, dst_mac: DstMac, src: Src, dst: Dst,
                     name: NameOpt = "lab", netns: Netns = None, expect_mac: ExpectMac = None,
                     allow_any_destination: AnyDst = False, size: SizeOpt = None,
                     flows: FlowsOpt = None, sut_counters_cmd: SutCmd = None, cpu: Cpu = None,
                     as_json: StateJson = False) -> None:  # fmt: skip
    """Register a SUT netassay does not manage, between two local ports: checks the
    path with a probe burst and measures the generator's peak through it; changes no
    interface (use it with 'sweep --testbed NAME')."""
    validate_name(name)
    cfg = external.make_config(
        tx=tx, rx=rx, dst_mac=dst_mac, src=src, dst=dst, netns=netns, expect_mac=expect_mac,
        allow_any_destination=allow_any_destination, size_bytes=size, flows=flows,
        sut_counters_cmd=sut_counters_cmd, gen_cpu=cpu,
    )  # fmt: skip
    external.validate(cfg)
    require_root("an external testbed")
    state = external.register(name, cfg)
    typer.echo(json.dumps(state, indent=2, sort_keys=True) if as_json else show.render(state))


def register(app: typer.Typer) -> None:
    """Add the testbed commands to the CLI."""
    app.add_typer(lab_app, name="testbed")
