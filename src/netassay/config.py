"""Typed, frozen configuration: defaults, then a TOML file, then flags.

Unknown sections or keys are rejected with one clear line. ``netassay config show``
prints what is in force.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from netassay.errors import InputError, UsageError
from netassay.names import min_frame_bytes
from netassay.params import RATE, as_text, choice, fraction, param, whole
from netassay.units import parse_rate

MODES = ("described", "published")
AUTO = "auto"
PINNINGS = (AUTO, "unpinned", "pin-1cpu", "pin-2cpu")
SUTS = ("router", "bridge", "xdp-router")
SINKS = ("xdp", "nft", "xdp+nft")


def resolve_pinning(pinning: str, cpus: int | None = None) -> tuple[str, str]:
    """The pinning a testbed uses on this machine (``cpus``: its CPU count), and why.

    ``auto`` lets the SUT, not the generator, be the bottleneck: ``pin-2cpu`` (the
    generator on CPU 0, the SUT's receive work on CPU 1) when there are two CPUs or more,
    else ``unpinned`` (with one CPU there is nothing to pin apart). Any other value is
    kept as it is.
    """
    n = cpus if cpus is not None else (os.cpu_count() or 1)
    machine = f"this {n}-CPU machine"
    if n >= 2:
        auto = "pin-2cpu"
        because = (
            "the generator on CPU 0, the SUT's receive work on CPU 1,"
            " so the SUT, not the generator, is the bottleneck"
        )
    else:
        auto = "unpinned"
        because = "pin-2cpu needs a second CPU; the generator and the SUT share the only one"
    if pinning == AUTO:
        return auto, f"{auto}, chosen by 'auto' on {machine}: {because}"
    if pinning == auto:
        return pinning, f"{pinning}, what 'auto' picks on {machine}: {because}"
    return pinning, f"{pinning}, as configured ('auto' would pick {auto} on {machine})"


@dataclass(frozen=True)
class AnalysisConfig:
    pdr: float = 0.005  # PDR goal loss ratio (0.5%)
    eta: float = 0.1  # TIR threshold to stay in saturation
    entry_factor: float = 3.0  # enter saturation below entry_factor * eta
    mode: str = "described"  # 'described' (default) or 'published' (the authors' notebook)
    plr_floor: float = 1e-6  # floor of the PLR log axis; the notebook clamps the mean there
    small_loss: float = 1e-4  # flag loads below PDR whose loss is at least this
    wide_ci: float = 1.0  # flag loads below PDR whose Delta_UCL95 exceeds this

    def validate(self) -> None:
        if not 0 < self.pdr < 1:
            raise UsageError(f"bad pdr {self.pdr}", "it is a loss ratio in (0, 1)", "e.g. 0.005")
        if not 0 < self.eta < 1:
            raise UsageError(f"bad eta {self.eta}", "the TIR threshold is in (0, 1)", "e.g. 0.1")
        if self.entry_factor < 1:
            raise UsageError(f"bad entry factor {self.entry_factor}", "it must be >= 1", "e.g. 3")
        if self.mode not in MODES:
            raise UsageError(
                f"unknown mode '{self.mode}'", f"known modes: {', '.join(MODES)}", "pick one"
            )


@dataclass(frozen=True)
class TestbedConfig:
    """The knobs of the embedded router testbed, each declared once (its flag, help,
    parser and range): 'testbed up', sweep, search and flood take them as flags and a
    campaign file as keys (``params``)."""

    __test__ = False  # not a pytest test class
    sut: str = param(
        "--sut", "router (kernel IP forwarding) | bridge | xdp-router (XDP forwarding)",
        default="router", check=choice(*SUTS), testbed=True,
    )  # fmt: skip
    pinning: str = param(
        "--pinning",
        "auto (default: pin-2cpu with 2+ CPUs, else unpinned) | unpinned | pin-1cpu | pin-2cpu",
        default=AUTO, check=choice(*PINNINGS), testbed=True,
    )  # fmt: skip
    ip_version: int = param(
        "--ip", "IP version: 4 or 6.", default=4, cli=int, check=choice(4, 6), testbed=True
    )
    size_bytes: int | None = param(  # frame without FCS; None: the smallest for the IP
        "--size",
        "Frame size in bytes (no FCS); by default the smallest: 64 (IPv4), 84 (IPv6).",
        default=None, cli=int, check=whole(64, 1518), ordinal=True, testbed=True,
    )  # fmt: skip
    flows: int = param(
        "--flows", "Number of UDP flows.", default=1, cli=int, check=whole(1, 65535),
        ordinal=True, testbed=True,
    )  # fmt: skip
    backlog: int | None = param(  # net.core.netdev_max_backlog while the testbed is up
        "--backlog", "net.core.netdev_max_backlog (restored after).", default=None, cli=int,
        check=whole(1, 10_000_000), ordinal=True, testbed=True,
    )  # fmt: skip
    txqueuelen: int | None = param(  # txqueuelen of the testbed's veth devices
        "--txqueuelen", "txqueuelen of the veths.", default=None, cli=int,
        check=whole(0, 1_000_000), ordinal=True, testbed=True,
    )  # fmt: skip
    sut_drop: float = param(  # ground truth: random drop probability in the SUT
        "--sut-drop", "Ground truth: random drop probability.", default=0.0, cli=float,
        check=fraction(0.0, 1.0), ordinal=True, testbed=True,
    )  # fmt: skip
    sut_cap_pps: float | None = param(  # ground truth: capacity cap on the SUT egress
        "--sut-cap", "Ground truth: SUT egress cap in pps (e.g. 100k).", default=None,
        parse=as_text(parse_rate), check=RATE, key="sut_cap", ordinal=True, testbed=True,
    )  # fmt: skip
    sink: str = param(  # how the sink counts test frames: xdp | nft | xdp+nft (cross-check)
        "--sink",
        "How the sink counts test frames: xdp (default, cheapest) | nft | xdp+nft (both, "
        "cross-checked).",
        default="xdp", check=choice(*SINKS), testbed=True,
    )  # fmt: skip

    def global_sysctls(self) -> dict[str, str]:
        """The host-wide sysctls this testbed sets while it is up (key -> value)."""
        if self.backlog is None:
            return {}
        return {"net.core.netdev_max_backlog": str(self.backlog)}

    def pinning_choice(self, cpus: int | None = None) -> tuple[str, str]:
        """The pinning used on this machine and why (see resolve_pinning)."""
        return resolve_pinning(self.pinning, cpus)

    def resolved(self, cpus: int | None = None) -> TestbedConfig:
        """This config with ``auto`` resolved for this machine (see resolve_pinning), and
        the frame size, when none was given, the smallest of its IP version."""
        out = with_frame_size(self)
        if out.pinning != AUTO:
            return out
        return replace(out, pinning=out.pinning_choice(cpus)[0])


def with_frame_size(cfg: Any) -> Any:
    """A testbed config with its frame size, when none was given, the smallest of its IP
    version (a config of another kind is returned as it is)."""
    if getattr(cfg, "size_bytes", 0) is None:
        return replace(cfg, size_bytes=min_frame_bytes(cfg.ip_version))
    return cfg


@dataclass(frozen=True)
class SweepConfig:
    rates: str = "50k:600k:50k"
    runs: int = 10
    duration_s: float = 2.0
    settle_s: float = 0.5
    db: str = "netassay.db"


@dataclass(frozen=True)
class Config:
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    testbed: TestbedConfig = field(default_factory=TestbedConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def resolved(self) -> Config:
        """This config with every ``auto`` knob resolved for this machine."""
        return replace(self, testbed=self.testbed.resolved())


def _coerce(section: str, f: dataclasses.Field[Any], value: Any, origin: str) -> Any:
    default = f.default
    kind = type(default) if default is not None else (float if "pps" in f.name else int)
    if isinstance(value, bool) or (value is None and default is not None):
        ok = isinstance(default, bool)
    elif kind is float:
        ok = isinstance(value, int | float)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise InputError(
            f"{origin}: [{section}] {f.name} = {value!r}",
            f"expected a {kind.__name__}",
            "fix the value or remove the key to use the default",
        )
    return value


def _apply(cfg: Config, data: dict[str, Any], origin: str) -> Config:
    sections = {f.name: f for f in fields(Config)}
    for name, values in data.items():
        if name not in sections:
            raise InputError(
                f"{origin}: unknown section [{name}]",
                f"known sections: {', '.join(sections)}",
                "fix the name or remove the section",
            )
        if not isinstance(values, dict):
            raise InputError(f"{origin}: [{name}] is not a table", "", "write it as [name]")
        current = getattr(cfg, name)
        known = {f.name: f for f in fields(current)}
        changes = {}
        for key, value in values.items():
            if key not in known:
                raise InputError(
                    f"{origin}: unknown key '{key}' in [{name}]",
                    f"known keys: {', '.join(known)}",
                    "fix the spelling or remove the key",
                )
            changes[key] = _coerce(name, known[key], value, origin)
        cfg = replace(cfg, **{name: replace(current, **changes)})
    return cfg


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    *,
    resolve: bool = True,
) -> Config:
    """Defaults, then the TOML file (if given or NETASSAY_CONFIG is set), then flags.

    With ``resolve`` (the default), ``auto`` knobs come back resolved for this machine, so
    that what a command runs and stores is the value used; ``config show`` passes False
    to print ``auto`` as it is in force.
    """
    cfg = Config()
    path = path or os.environ.get("NETASSAY_CONFIG")
    if path:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text())
        except FileNotFoundError as exc:
            raise InputError(f"{p}: no such config file", "", "check the path") from exc
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{p}: not valid TOML", str(exc), "fix the syntax") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: cannot read the config", str(exc), "check the file") from exc
        cfg = _apply(cfg, data, str(p))
    if overrides:
        clean = {s: {k: v for k, v in kv.items() if v is not None} for s, kv in overrides.items()}
        cfg = _apply(cfg, {s: kv for s, kv in clean.items() if kv}, "flags")
    cfg.analysis.validate()
    return cfg.resolved() if resolve else cfg


def to_toml(cfg: Config) -> str:
    """Render a config as TOML (None values are shown commented out)."""
    lines: list[str] = []
    for section, values in cfg.as_dict().items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if value is None:
                lines.append(f"# {key} = (unset)")
            elif isinstance(value, bool):
                lines.append(f"{key} = {'true' if value else 'false'}")
            elif isinstance(value, str):
                lines.append(f'{key} = "{value}"')
            else:
                lines.append(f"{key} = {value!r}")
        lines.append("")
    return "\n".join(lines)
