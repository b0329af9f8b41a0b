"""Parameters declared once: a field of a frozen request or config dataclass carries its
flag, its help, how its value is parsed and checked, and its range. The command line's
options, the campaign file's keys and their defaults are derived from these fields
(``cli.common.with_params``, ``campaign.spec``); nothing else declares them again.

    rates_pps: tuple[float, ...] = param("--rates", "START:STOP:STEP or a,b,c",
                                         default=(...), parse=rates, ordinal=False)

``parse`` turns what a user wrote (command-line text, or a campaign file's value) into
the field's value in its units, raising ``UsageError`` with one line; ``check`` turns a
campaign file's value into its canonical form (a number for an ordered factor), raising
``ValueError`` with why (the campaign file names the line). Each defaults to the other.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from netassay.errors import Deprecated, NetassayError, UsageError
from netassay.units import parse_count, parse_duration, parse_pause, parse_rate, parse_rates

# what a load (``Param.load``) is written in, said when one is refused
LOAD_UNITS = (
    "a load is frames/s (200k, 1.5M), bit/s (500Mbps, 1Gbit/s; bps, bit/s or bit, never "
    "bytes) or a share of the line rate (50%)"
)
LOAD_TODO = "write it like 200k, 500Mbps or 50%"
# a parser (a callable) that ``tagged`` marks with its metavar
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Param:
    """One declared parameter (see the module)."""

    flag: str  # the command-line option, e.g. "--rates"
    help: str
    parse: Callable[[Any], Any] | None = None  # what a user wrote -> the field's value
    check: Callable[[Any], Any] | None = None  # a campaign value -> canonical (ValueError)
    cli: type = str  # how the command line takes it: str, int, float, bool, list
    key: str = ""  # the campaign file's key (default: the flag's name, '-' as '_')
    ordinal: bool = False  # levels are ordered numbers (a factor's trend test applies)
    campaign: bool = True  # a key of a campaign cell
    testbed: bool = False  # a testbed knob
    scenario: bool = False  # an acceptance scenario's knob (its scenario file)
    negate: bool = False  # a flag that turns the field off (--no-ramp: ramp = False)
    show: str = ""  # the default as a campaign file writes it ("" : the value itself)
    example: str = ""  # a value to suggest when one is missing
    load: str = ""  # a load that may be written in bit/s or as a share: "one" or "list"
    old: tuple[str, ...] = ()  # older spellings of the flag, taken for one release with a warning
    what: str = ""  # the concept in a few words, said with a deprecation ("probes per second")
    metavar: str = ""  # what to write ("" : derived, ``metavar_of``)
    hidden: bool = False  # taken but not listed in a command's help

    @property
    def name(self) -> str:
        """The key: ``key``, else the flag's name ('--no-ramp' -> 'ramp')."""
        if self.key:
            return self.key
        name = self.flag.removeprefix("--")
        return (name.removeprefix("no-") if self.negate else name).replace("-", "_")

    @property
    def old_names(self) -> tuple[str, ...]:
        """The keys of the older spellings ('--segment' -> 'segment')."""
        return tuple(o.removeprefix("--").replace("-", "_") for o in self.old)

    def deprecated(self, old: str, where: str) -> str:
        """The one line said when ``old`` (a flag or a file's key) is used ``where``
        ("for 'netassay rtt'")."""
        new = self.flag if old.startswith("--") else self.name
        what = f" ({self.what})" if self.what else ""
        return (
            f"{old} is deprecated {where}: use {new}{what}; the old spelling goes in the "
            "next release"
        )

    def value(self, given: Any) -> Any:
        """A user's value as the field takes it (UsageError when it cannot be); a load
        refused says every unit a load is written in."""
        if self.parse is None:
            return given
        try:
            return self.parse(given)
        except UsageError as exc:
            if not self.load or "k/M/G suffix" not in exc.why:  # not a matter of units
                raise
            raise UsageError(f"{exc.what} for {self.flag}", LOAD_UNITS, LOAD_TODO) from exc

    def canonical(self, given: Any) -> Any:
        """A campaign value in its canonical form (ValueError saying why not)."""
        convert = self.check if self.check is not None else self.parse
        if convert is None:
            return given
        try:
            return convert(given)
        except NetassayError as exc:  # a parser's refusal, said as the campaign file's
            raise ValueError(exc.why or exc.what) from exc


def renamed_keys(
    values: dict[str, Any], params: dict[str, Param], where: Callable[[str], tuple[str, str]]
) -> dict[str, Any]:
    """A file's keys (a config section, a campaign table) with each older spelling of a
    parameter's key ('rate' of rtt's --rate) as today's ('probe_rate'), each said
    deprecated once, as the file's other problems are said: ``where(key)`` gives its
    place ('c.toml:5') and what holds it ('an rtt cell')."""
    olds = {o: p for p in params.values() for o in p.old_names}
    out = {}
    for key, value in values.items():
        p = olds.get(key) if key not in params else None
        if p is not None:
            place, holder = where(key)
            said = f"{place}: {p.deprecated(key, f'({holder})')}"
            warnings.warn(said, Deprecated, stacklevel=3)
            key = p.name
        out[key] = value
    return out


def param(flag: str, help: str, *, default: Any = dataclasses.MISSING, **kw: Any) -> Any:
    """A dataclass field declared as a parameter (``Param``'s keywords)."""
    meta = {"param": Param(flag, help, **kw)}
    if isinstance(default, list | dict | set):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def declared(cls: Any) -> Iterator[tuple[dataclasses.Field[Any], Param]]:
    """The fields of a dataclass that are parameters, in declaration order, and those of
    a field holding another such dataclass (``nested``: an acceptance test's scenario)."""
    for f in dataclasses.fields(cls):
        p = f.metadata.get("param")
        if p is not None:
            yield f, p
        elif "nested" in f.metadata:
            yield from declared(f.metadata["nested"])


def nested(cls: Any) -> dict[str, type]:
    """The fields of ``cls`` that hold a dataclass of parameters: name -> its class."""
    return {f.name: f.metadata["nested"] for f in dataclasses.fields(cls) if "nested" in f.metadata}


def default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


# -- parsers and checks shared by the declarations -----------------------------------------
def spelling_hint(key: str, known: Iterator[str] | list[str] | tuple[str, ...]) -> str:
    """What a file's unknown ``key`` was likely meant to be, as "did you mean 'x'? "
    ("" when nothing is near): a flag's spelling (``--sut-cap``) is the key's with '_'
    (``sut_cap``); else the closest known key, if any is close."""
    known = list(known)
    as_key = key.lstrip("-").replace("-", "_")
    if as_key != key and as_key in known:
        return f"did you mean '{as_key}'? (a file writes '_' where a flag has '-'); "
    near = difflib.get_close_matches(as_key, known, n=1, cutoff=0.75)
    return f"did you mean '{near[0]}'? " if near else ""


def tagged(fn: F, metavar: str) -> F:
    """``fn`` marked with the metavar a value it takes is written as (``metavar_of``)."""
    fn.__dict__["metavar"] = metavar
    return fn


def choice(*options: Any) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v not in options:
            raise ValueError(f"expected one of {', '.join(map(str, options))}")
        return v

    return tagged(check, "|".join(map(str, options)))


def whole(lo: int, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError("expected a whole number")
        if v < lo or (hi is not None and v > hi):
            raise ValueError(f"expected {lo}..{hi}" if hi is not None else f"expected >= {lo}")
        return v

    return tagged(check, "N")


def fraction(lo: float, hi: float, closed_hi: bool = False) -> Callable[[Any], float]:
    """A number in [lo, hi) ('0.5%' is 0.005)."""

    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError("expected a number")
        x = (
            float(v)
            if not isinstance(v, str)
            else float(v.rstrip("%")) / (100 if v.endswith("%") else 1)
        )
        if not (lo <= x < hi or (closed_hi and x == hi)):
            raise ValueError(f"expected a value in [{lo:g}, {hi:g}{']' if closed_hi else ')'}")
        return x

    return tagged(check, "RATIO")


def units(parse: Callable[[str], float]) -> Callable[[Any], float]:
    """A rate or a duration: '100k', '1s', or a bare number (pps, seconds)."""
    metavar = _PARSED.get(parse, "")

    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError("expected a number or a string like 100k or 1s")
        try:
            return float(parse(str(v)))
        except NetassayError as exc:
            raise ValueError(exc.why or exc.what) from exc

    return tagged(check, metavar)


def flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


tagged(flag, "")


def rate_list(v: Any) -> tuple[float, ...]:
    if isinstance(v, list):
        v = ",".join(str(x) for x in v)
    if not isinstance(v, str):
        raise ValueError("expected START:STOP:STEP, 'a,b,c' or a list of rates")
    try:
        return tuple(parse_rates(v))
    except NetassayError as exc:
        raise ValueError(exc.why or exc.what) from exc


tagged(rate_list, "RATES")


def hold_ns(v: Any) -> float:
    """A hold: '200us', '1ms', 0 (nanoseconds, as a number)."""
    m = (
        re.fullmatch(r"([0-9.]+)\s*(ns|us|ms|s)?", str(v).strip())
        if not isinstance(v, bool)
        else None
    )
    if m is None:
        raise ValueError("expected a duration like 200us, 1ms or 0")
    try:
        x = float(m.group(1))
    except ValueError as exc:
        raise ValueError("expected a duration like 200us, 1ms or 0") from exc
    return x * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, None: 1e9}[m.group(2)]


tagged(hold_ns, "DURATION")


def cpu(v: Any) -> Any:
    """A CPU number, or "none" (the scheduler's choice)."""
    if v == "none":
        return -1
    return whole(0, 4095)(v)


tagged(cpu, "N|none")


def buffer_bytes(v: Any) -> float:
    """Socket buffer bytes ('4M', 262144), or "default" (the kernel's)."""
    if v == "default":
        return 0.0
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise ValueError('expected a size like 4M, a number of bytes, or "default"')
    try:
        n = parse_count(str(v), "socket buffer")
    except NetassayError as exc:
        raise ValueError(exc.why or exc.what) from exc
    if not 1024 <= n <= 2**31:
        raise ValueError("expected 1k..2G bytes")
    return n


tagged(buffer_bytes, "SIZE|default")


# what a value each parser of ``units`` takes is written as
_PARSED: dict[Callable[..., Any], str] = {
    parse_rate: "RATE", parse_rates: "RATES", parse_duration: "DURATION",
    parse_pause: "DURATION", parse_count: "N",
}  # fmt: skip
GOAL_SYNTAX = "ndr, pdr (0.005) or pdr:R, R a ratio or a percent (pdr:0.005, pdr:0.5%)"


def goal_ratio(text: Any, bare: bool = False) -> float:
    """A goal's loss ratio, as ``--goal`` is written in search and soak alike: 'ndr' (0),
    'pdr' (0.005), 'pdr:R' with R a ratio or a percent ('pdr:0.01', 'pdr:1%'); ``bare``:
    R alone too ('0.005', '0.5%': soak's goal is one ratio). UsageError when not."""
    t = str(text).strip().lower()
    if isinstance(text, bool):
        t = ""
    if t in ("ndr", "pdr"):
        return 0.0 if t == "ndr" else 0.005
    kind, sep, ratio = t.partition(":")
    if not sep and bare:
        kind, ratio = "pdr", t
    shapes = f"{GOAL_SYNTAX}{', or R alone' if bare else ''}"
    if kind not in ("pdr", "ndr") or not ratio:
        raise UsageError(f"bad --goal '{text}'", f"a goal is {shapes}", "e.g. --goal pdr:0.005")
    try:
        value = float(ratio[:-1]) / 100 if ratio.endswith("%") else float(ratio)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value):
        raise UsageError(f"bad --goal '{text}'", f"'{ratio}' is not a number",
                         "write R as e.g. 0.005 or 0.5%")  # fmt: skip
    if kind == "ndr" and value != 0:
        raise UsageError(f"bad --goal '{text}'", "NDR is zero loss", "write pdr:R instead")
    if not 0 <= value < 1:
        raise UsageError(f"bad --goal '{text}'", "a goal loss ratio is in [0, 1) (0% to 100%)",
                         "e.g. pdr:0.005 or pdr:0.5%")  # fmt: skip
    return value


def goal_check(bare: bool = False) -> Callable[[Any], Any]:
    """A campaign or config file's goal: checked as ``goal_ratio``, kept as written."""

    def check(v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError(f"expected a goal: {GOAL_SYNTAX}")
        try:
            goal_ratio(v, bare)
        except NetassayError as exc:
            raise ValueError(exc.why) from exc
        return v

    return tagged(check, "GOAL")


RATE = units(parse_rate)
DURATION = units(parse_duration)
PAUSE = units(parse_pause)


def as_text(parse: Callable[[str], Any]) -> Callable[[Any], Any]:
    """A parser of command-line text that also takes a campaign file's number."""

    def run(v: Any) -> Any:
        if isinstance(v, bool):
            raise UsageError(f"bad value {v!r}", "expected a number or text", "")
        return parse(str(v))

    return tagged(run, getattr(parse, "metavar", "") or _PARSED.get(parse, ""))


# a field's name ending (its unit) -> what its value is written as, when neither the
# parameter nor its parser says
_SUFFIXES = (("_pps", "RATE"), ("_bps", "RATE"), ("_s", "DURATION"), ("_ns", "DURATION"),
             ("_bytes", "SIZE"))  # fmt: skip


def metavar_of(f: dataclasses.Field[Any], p: Param) -> str:
    """What a command's help shows a parameter's value as: RATE, RATES, DURATION, N,
    RATIO, SIZE, FILE, NAME, its choices joined by '|' ('4|6')... The parameter's own
    (``metavar``), else its parser's or check's (``tagged``), else its field's unit (a
    name ending ``_pps`` is a RATE, a tuple of them RATES), else its type's."""
    if p.metavar or p.cli is bool:
        return p.metavar
    tags = [getattr(fn, "metavar", None) for fn in (p.parse, p.check) if fn is not None]
    tag = next((t for t in tags if t), "")
    unit = next((m for end, m in _SUFFIXES if f.name.endswith(end)), "")
    if unit and "tuple" in str(f.type):
        unit += "S" if unit == "RATE" else ""
    if tag and not (tag == "N" and unit == "SIZE"):
        return tag
    if unit:
        return unit
    if str(f.type).split(" | ")[0] == "int":  # a count written as text (1k, 1M)
        return "N"
    return {int: "N", float: "NUMBER", list: "VALUE"}.get(p.cli, "TEXT")


def request_from(cls: Any, given: dict[str, Any], base: dict[str, Any] | None = None) -> Any:
    """A Request from values given by key (the command line's or a campaign cell's):
    each parsed by its parameter; not given: ``base`` (a config file's), else the
    field's default. A field without a default that is not given is a usage error. A
    field holding a dataclass of parameters (``params.nested``) is built the same way."""
    inner = nested(cls)
    values: dict[str, Any] = {
        name: request_from(sub, given) for name, sub in inner.items()
        if any(given.get(p.name) is not None for _, p in declared(sub))
    }  # fmt: skip
    own = {f.name for f in dataclasses.fields(cls)}
    for f, p in declared(cls):
        if f.name not in own or f.name in inner:
            continue
        if given.get(p.name) is not None:
            values[f.name] = p.value(given[p.name])
        elif base is not None and f.name in base:
            values[f.name] = base[f.name]
        elif default_of(f) is dataclasses.MISSING:
            raise UsageError(f"{p.flag} is required", p.help, f"give {p.flag}")
    return cls(**values)
