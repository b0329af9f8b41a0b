"""CLI of the embedded testbed and the sweep: parses flags and delegates."""

from __future__ import annotations

import functools
import inspect
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from netassay.errors import Interrupted

lab_app = typer.Typer(help="Build, inspect and remove the embedded testbed.", no_args_is_help=True)

NameOpt = Annotated[
    str, typer.Option("--name", help="Testbed name: 1-8 lower-case letters or digits.")
]
SutOpt = Annotated[
    str | None,
    typer.Option(
        "--sut", help="router (kernel IP forwarding) | bridge | xdp-router (XDP forwarding)"
    ),
]
PinOpt = Annotated[
    str | None,
    typer.Option(
        "--pinning",
        help="auto (default: pin-2cpu with 2+ CPUs, else unpinned) | unpinned | pin-1cpu | "
        "pin-2cpu",
    ),
]
IpOpt = Annotated[int | None, typer.Option("--ip", help="IP version: 4 or 6.")]
SizeOpt = Annotated[int | None, typer.Option("--size", help="Frame size in bytes (no FCS).")]
FlowsOpt = Annotated[int | None, typer.Option("--flows", help="Number of UDP flows.")]
BacklogOpt = Annotated[
    int | None, typer.Option("--backlog", help="net.core.netdev_max_backlog (restored after).")
]
QlenOpt = Annotated[int | None, typer.Option("--txqueuelen", help="txqueuelen of the veths.")]
DropOpt = Annotated[
    float | None, typer.Option("--sut-drop", help="Ground truth: random drop probability.")
]
CapOpt = Annotated[
    str | None, typer.Option("--sut-cap", help="Ground truth: SUT egress cap in pps (e.g. 100k).")
]
SinkOpt = Annotated[
    str | None,
    typer.Option(
        "--sink",
        help="How the sink counts test frames: xdp (default, cheapest) | nft | "
        "xdp+nft (both, cross-checked).",
    ),
]


TestbedOpt = Annotated[
    str | None,
    typer.Option(
        "--testbed",
        help="Run on this testbed as it is registered or up (e.g. one from 'testbed "
        "external'); it must exist.",
    ),
]
TbArg = Annotated[
    str | None, typer.Argument(help="Testbed name (the same as --name).", show_default=False)
]


# The testbed flags of 'testbed up', 'sweep' and 'search': (parameter, testbed config
# field, option), in the order their help lists them.
_TESTBED_FLAGS: tuple[tuple[str, str, Any], ...] = (
    ("sut", "sut", SutOpt),
    ("pinning", "pinning", PinOpt),
    ("ip", "ip_version", IpOpt),
    ("size", "size_bytes", SizeOpt),
    ("flows", "flows", FlowsOpt),
    ("backlog", "backlog", BacklogOpt),
    ("txqueuelen", "txqueuelen", QlenOpt),
    ("sut_drop", "sut_drop", DropOpt),
    ("sut_cap", "sut_cap", CapOpt),
    ("sink", "sink", SinkOpt),
)


def _testbed_overrides(**kv: Any) -> dict[str, Any]:
    cap = kv.pop("sut_cap", None)
    if cap is not None:
        from netassay.units import parse_rate

        kv["sut_cap_pps"] = parse_rate(cap)
    return {k: v for k, v in kv.items() if v is not None}


def testbed_flags(command: Callable[..., None]) -> Callable[..., None]:
    """Give a command the testbed flags (--sut ... --sink) where it has its parameter
    `flags`, which it then receives as the testbed config overrides they make."""
    sig = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        if p.name != "flags":
            params.append(p)
            continue
        params += [
            inspect.Parameter(arg, p.POSITIONAL_OR_KEYWORD, default=None, annotation=opt)
            for arg, _, opt in _TESTBED_FLAGS
        ]

    @functools.wraps(command)
    def run(**kv: Any) -> None:
        given = {field: kv.pop(arg) for arg, field, _ in _TESTBED_FLAGS}
        command(flags=_testbed_overrides(**given), **kv)

    run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


def _config(testbed: dict[str, Any], sweep: dict[str, Any] | None = None) -> Any:
    from netassay.cli import config_path
    from netassay.config import load_config

    return load_config(config_path(), overrides={"testbed": testbed, "sweep": sweep or {}})


def _err(msg: str) -> None:
    typer.echo(msg, err=True)


@lab_app.command("up")
@testbed_flags
def testbed_up(
    name: NameOpt = "lab",
    flags: dict[str, Any] | None = None,
) -> None:
    """Build a testbed that stays up (use it with 'sweep --name'); prints its name."""
    from netassay.testbed import Testbed, validate_name
    from netassay.testbed import topology as T

    validate_name(name)
    cfg = _config(flags or {}).testbed
    T.validate(cfg)
    with Testbed(name, cfg, keep=True):
        pass
    typer.echo(name)


@lab_app.command("down")
def testbed_down(tb: TbArg = None, name: NameOpt = "lab") -> None:
    """Remove a testbed: its namespaces, state and any sysctl it changed (an external
    testbed is forgotten: its ports are left as they are)."""
    from netassay.testbed import require_root, validate_name
    from netassay.testbed import state as S
    from netassay.testbed import topology as T

    name = tb or name
    validate_name(name)
    require_root("removing a testbed")
    with S.Lock(name):
        external = T.kind_of(S.read_state(name) or {}) == "external"
        removed = T.teardown(name)
    if external:
        typer.echo(f"forgot external testbed '{name}' (its ports are left as they were)")
        return
    typer.echo(f"removed {len(removed)} namespace(s) of testbed '{name}'")


@lab_app.command("cleanup")
def testbed_cleanup(
    name: Annotated[
        str | None, typer.Option("--name", help="Only this testbed (default: every na-*).")
    ] = None,
) -> None:
    """Remove every na-* namespace and testbed state left behind; restore sysctls."""
    from netassay.testbed import require_root, validate_name
    from netassay.testbed import topology as T

    if name is not None:
        validate_name(name)
    require_root("cleanup")
    removed = T.cleanup({name} if name else None)
    typer.echo(
        f"removed {len(removed)} namespace(s)" + (f": {' '.join(removed)}" if removed else "")
    )


@lab_app.command("show")
def testbed_show(
    tb: TbArg = None,
    name: NameOpt = "lab",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print a testbed's topology, knobs and environment."""
    from netassay.testbed import show

    info = show.describe(tb or name)
    typer.echo(json.dumps(info, indent=2, sort_keys=True) if as_json else show.render(info))


@lab_app.command("external")
def testbed_external(
    tx: Annotated[str, typer.Option("--tx", help="Local port the generator sends on.")],
    rx: Annotated[str, typer.Option("--rx", help="Local port the sink counts on.")],
    dst_mac: Annotated[
        str, typer.Option("--dst-mac", help="The SUT's MAC on the tx side (frames go there).")
    ],
    src: Annotated[str, typer.Option("--src", help="Source address, e.g. 198.18.0.2.")],
    dst: Annotated[str, typer.Option("--dst", help="Destination, e.g. 198.19.0.2.")],
    name: NameOpt = "lab",
    netns: Annotated[
        str | None,
        typer.Option("--netns", help="Network namespace of both ports (default: the host's own)."),
    ] = None,
    expect_mac: Annotated[
        str | None,
        typer.Option(
            "--expect-mac", help="MAC the probes must come back to (default: the rx port's)."
        ),
    ] = None,
    allow_any_destination: Annotated[
        bool,
        typer.Option(
            "--allow-any-destination",
            help="Allow a --dst outside 198.18.0.0/15 and 2001:2::/48 (test traffic to it).",
        ),
    ] = False,
    size: SizeOpt = None,
    flows: FlowsOpt = None,
    sut_counters_cmd: Annotated[
        str | None,
        typer.Option(
            "--sut-counters-cmd",
            help="Command printing the SUT's counters ('name value' lines or JSON), run "
            "before and after each trial, e.g. 'ssh r1 nstat -az'.",
        ),
    ] = None,
    cpu: Annotated[
        int | None, typer.Option("--cpu", help="Pin the generator to this CPU (default: not).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
) -> None:
    """Register a SUT netassay does not manage, between two local ports: checks the
    path with a probe burst and measures the generator's peak through it; changes no
    interface (use it with 'sweep --testbed NAME')."""
    from netassay.testbed import external as X
    from netassay.testbed import require_root, validate_name

    validate_name(name)
    cfg = X.make_config(
        tx=tx, rx=rx, dst_mac=dst_mac, src=src, dst=dst, netns=netns, expect_mac=expect_mac,
        allow_any_destination=allow_any_destination, size_bytes=size, flows=flows,
        sut_counters_cmd=sut_counters_cmd, gen_cpu=cpu,
    )  # fmt: skip
    X.validate(cfg)
    require_root("an external testbed")
    state = X.register(name, cfg)
    typer.echo(json.dumps(state, indent=2, sort_keys=True) if as_json else X.render(state))


@testbed_flags
def sweep(
    rates: Annotated[str | None, typer.Option("--rates", help="START:STOP:STEP or a,b,c")] = None,
    runs: Annotated[int | None, typer.Option("--runs", help="Repetitions per load (K).")] = None,
    duration: Annotated[
        str | None, typer.Option("--duration", help="Trial length, e.g. 2s.")
    ] = None,
    settle: Annotated[str | None, typer.Option("--settle", help="Pause between trials.")] = None,
    db: Annotated[str | None, typer.Option("--db", help="Results store (SQLite).")] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue an unfinished sweep in --db (the newest)."),
    ] = False,
    experiment: Annotated[
        int | None,
        typer.Option("--experiment", help="With --resume: the experiment id to continue."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; run nothing.")
    ] = False,
    label: Annotated[str, typer.Option("--label", help="Experiment label.")] = "",
    no_peak_check: Annotated[
        bool, typer.Option("--no-peak-check", help="Skip the generator peak probe.")
    ] = False,
    retries: Annotated[
        int, typer.Option("--retries", help="Repeat a trial that is a measurement fault.")
    ] = 2,
    name: Annotated[
        str | None,
        typer.Option("--name", help="Testbed name [lab]; a resume uses the sweep's own."),
    ] = None,
    flags: dict[str, Any] | None = None,
    testbed: TestbedOpt = None,
) -> None:
    """Run a load sweep on the embedded testbed (or on --testbed); each trial is stored
    as it ends."""
    from netassay.methods.sweep import plan as P
    from netassay.methods.sweep import run as SW

    o = flags or {}
    name = SW.named_testbed(testbed, name, o, ("--rates", rates))
    req = SW.SweepRequest(
        rates=rates, runs=runs, duration=duration, settle=settle, db=db, resume=resume,
        experiment=experiment, label=label, check_peak=not no_peak_check, retries=retries,
        name=name, testbed_flags=o,
    )  # fmt: skip
    from netassay.cli import config_path

    sw = SW.prepare(req, config_path())
    if dry_run:
        typer.echo(f"testbed '{sw.name}': {_knobs(sw.testbed)}")
        typer.echo(
            f"store: {sw.db}" + (f" (resuming experiment {sw.experiment_id})" if resume else "")
        )
        done = _done(sw) if resume else set()
        typer.echo(P.describe(sw.plan, done))
        return
    sw.progress = _progress(len(sw.plan.trials()))
    try:
        SW.run(sw)
    except KeyboardInterrupt as exc:  # the testbed is already down when we get here
        raise Interrupted(
            "sweep interrupted",
            f"{sw.stored} trial(s) of this run are stored in {sw.db}",
            f"continue with 'netassay sweep --db {sw.db} --resume'",
        ) from exc
    _err("")
    typer.echo(f"stored {sw.stored} trial(s) in {sw.db} (experiment {sw.experiment_id})")


def _done(sw: Any) -> set[tuple[int, int]]:
    from netassay.store.db import Store

    with Store(sw.db, create=False) as st:
        return st.done_trials(sw.experiment_id)


def _knobs(cfg: Any) -> str:
    from dataclasses import asdict

    return ", ".join(f"{k}={v}" for k, v in asdict(cfg).items() if v is not None)


def _progress(total: int) -> Any:
    tty = sys.stderr.isatty()

    def show(line: str) -> None:
        done = int(line[1:].split("/", 1)[0]) if line.startswith("[") else 0
        width = 20
        fill = int(width * done / max(total, 1))
        bar = "#" * fill + "-" * (width - fill)
        if tty:
            sys.stderr.write(f"\r\x1b[2K[{bar}] {line}")
        else:
            sys.stderr.write(f"[{bar}] {line}\n")
        sys.stderr.flush()

    return show


def register(app: typer.Typer) -> None:
    """Add the testbed and sweep commands to the CLI."""
    app.add_typer(lab_app, name="testbed")
    app.command("sweep")(sweep)
