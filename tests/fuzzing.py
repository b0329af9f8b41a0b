"""netassay's parsers as fuzz targets: what each one is given (a hypothesis strategy that
draws well-formed inputs, then breaks them), how it is called, and what must hold.

Every target's properties:

- it returns, or it refuses with the error class its callers expect (a flag's value:
  ``UsageError``; a file: ``InputError``; a campaign or config key's check:
  ``ValueError``, which the file's reader turns into one line naming the line);
- never another exception (a traceback, which the CLI would show as an internal error,
  exit 70);
- a refusal is one line (a campaign file's: one line per problem);
- what it accepts makes sense (a rate is finite and positive, a list increases, a
  share is at most 100%), and where netassay prints what it read (an IMIX spec, the
  configuration in force, the raw text an iperf3 run keeps) that parses back to the
  same.

``tests/unit/test_fuzz_parsers.py`` runs every target for a few seconds;
``bench/fuzz.py`` runs each one for 100,000 inputs and counts distinct failures.
The CLI's own properties (exit class, one line, a refused input leaves the store as it
was) are ``tests/integration/test_fuzz_cli.py``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import json
import math
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from netassay.errors import InputError, NetassayError, UsageError

ROOT = Path(__file__).resolve().parents[1]
IPERF3_DATA = ROOT / "tests" / "data" / "iperf3"


class PropertyFailed(AssertionError):
    """An accepted input whose result breaks a property (``prop`` names it)."""

    def __init__(self, prop: str, detail: str = "") -> None:
        self.prop = prop
        super().__init__(f"{prop}: {detail}" if detail else prop)


def need(ok: bool, prop: str, detail: Any = "") -> None:
    if not ok:
        raise PropertyFailed(prop, str(detail)[:300])


@dataclass(frozen=True)
class Target:
    """One parser as a fuzz target."""

    name: str
    strategy: Callable[[], st.SearchStrategy[Any]]  # built on first use (imports)
    call: Callable[[Any], Any]  # the parser on one input; returns what it read
    refuses: tuple[type[Exception], ...]  # the classes a refusal may have
    accepted: Callable[[Any, Any], None] | None = None  # properties of what it read
    lines: int = 1  # most lines a refusal may have (0: any, one per problem)


def check(t: Target, x: Any) -> str:
    """Run target ``t`` on ``x``: 'accepted' or 'refused', or raise what broke a
    property (an unexpected exception as itself)."""
    return outcome(t, x)[0]


def outcome(t: Target, x: Any) -> tuple[str, str]:
    """``check``, and the refusal's text ('' when accepted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = t.call(x)
        except t.refuses as exc:
            text = exc.line() if isinstance(exc, NetassayError) else str(exc)
            need(bool(text.strip()), "a refusal says why", repr(exc))
            if t.lines:
                need(len(text.splitlines()) <= t.lines, "a refusal is one line", text)
            return "refused", text
    if t.accepted is not None:
        t.accepted(x, out)
    return "accepted", ""


def signature(exc: BaseException) -> str:
    """What tells one failure from another: its class and where netassay raised it (the
    innermost frame in netassay's or the tests' code), or the property it broke."""
    if isinstance(exc, PropertyFailed):
        return f"property: {exc.prop}"
    where = "?"
    tb = exc.__traceback__
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if "netassay" in fn or "/tests/" in fn:
            where = f"{Path(fn).parent.name}/{Path(fn).name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return f"{type(exc).__name__} at {where}"


# -- building blocks ---------------------------------------------------------------------
_SPACE = st.sampled_from(["", "", "", " ", "  ", "\t", "\n", "\u00a0", "\u2003"])
_ODD = [
    "", ".", "..", "-", "+", "e", "e5", "1e", "nan", "NaN", "inf", "-inf", "Infinity",
    "0x10", "1_000", "0", "00", "-0", "0.0", "²", "³", "٣", "０", "１２", "½", "Ⅻ", "🙂",
    "\x00", "1,5", "1.2.3", "9" * 400, "1" + "0" * 309, "0." + "0" * 400 + "1",
]  # fmt: skip


_DEEP = ["[" * 3000, '{"a":' * 3000, "a = " + "[" * 3000]  # nesting beyond a recursion limit


@functools.cache
def _number() -> st.SearchStrategy[str]:
    digits = st.text("0123456789", max_size=12)
    return st.one_of(
        st.integers(-(10**6), 10**400).map(str),
        st.integers(0, 10**6).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.floats(0, 1e7).map(lambda f: f"{f:g}"),
        st.builds(lambda a, b: f"{a}.{b}", digits, digits),
        st.builds(lambda m, e: f"{m}e{e}", st.integers(0, 999), st.integers(-400, 400)),
        st.sampled_from(_ODD),
        st.text(max_size=4),
    )


def _token(suffixes: list[str]) -> st.SearchStrategy[str]:
    return _tokens_of(tuple(suffixes))


@functools.cache
def _tokens_of(suffixes: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda a, n, b, u, c: f"{a}{n}{b}{u}{c}",
        _SPACE, _number(), _SPACE, st.sampled_from(suffixes), _SPACE,
    )  # fmt: skip


RATE_UNITS = ["", "", "k", "K", "m", "M", "g", "G", "pps", "kpps", " Mpps", "kk", "T", "²"]
TIME_UNITS = ["", "", "s", "ms", "m", "min", "h", "us", "ns", "sec", "S", "mS", " s", "d"]
LOAD_UNITS = [
    "", "k", "M", "G", "pps", "kpps", "bps", "kbps", "Mbps", "Gbps", "bit", "Gbit", "bit/s",
    "Mbit/s", "Gbit/s", "%", " %", "%pdr", "Bps", "b/s", "%%",
]  # fmt: skip


@st.composite
def mutated(draw: Any, base: st.SearchStrategy[str], max_ops: int = 4) -> str:
    """A text from ``base`` with up to ``max_ops`` edits: a slice deleted, duplicated or
    cut off, a character replaced, text or a special token inserted."""
    s = draw(base)
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(["del", "ins", "rep", "dup", "cut", "tok"]))
        i = draw(st.integers(0, len(s)))
        j = draw(st.integers(i, min(len(s), i + 16)))
        if op == "del":
            s = s[:i] + s[j:]
        elif op == "ins":
            s = s[:i] + draw(st.text(max_size=4)) + s[i:]
        elif op == "rep" and i < len(s):
            s = s[:i] + draw(st.characters()) + s[i + 1 :]
        elif op == "dup":
            s = s[:j] + s[i:j] + s[j:]
        elif op == "cut":
            s = s[:i]
        elif op == "tok":
            tok = draw(st.sampled_from([*_ODD, *_DEEP, ",", ":", "[", "]", "{", "}", '"', "="]))
            s = s[:i] + tok + s[i:]
    return s


def _lists(token: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        token,
        st.lists(token, min_size=0, max_size=6).map(",".join),
        st.lists(token, min_size=1, max_size=4).map(":".join),
        st.tuples(token, token, token).map(":".join),
    )


# -- unit parsers ---------------------------------------------------------------------------
def _finite_positive(v: Any) -> bool:
    return isinstance(v, float | int) and math.isfinite(v) and v > 0


def _rate_ok(x: str, v: float) -> None:
    need(_finite_positive(v), "a rate is finite and positive", v)


def _rates_ok(x: str, vs: list[float]) -> None:
    need(bool(vs) and len(vs) <= 10_000, "a list holds 1..10000 loads", len(vs))
    need(all(_finite_positive(v) for v in vs), "every load is finite and positive", vs[:5])
    need(all(b > a for a, b in itertools.pairwise(vs)), "loads increase", vs[:5])


def _duration_ok(x: str, v: float) -> None:
    need(_finite_positive(v), "a duration is finite and positive", v)


def _pause_ok(x: str, v: float) -> None:
    need(v == 0 or _finite_positive(v), "a pause is 0 or finite and positive", v)


def _rate(x: str) -> float:
    from netassay.units import parse_rate

    return parse_rate(x)


def _rates(x: str) -> list[float]:
    from netassay.units import parse_rates

    return parse_rates(x)


def _duration(x: str) -> float:
    from netassay.units import parse_duration

    return parse_duration(x)


def _pause(x: str) -> float:
    from netassay.units import parse_pause

    return parse_pause(x)


def _ip(v: Any) -> int:
    """The IP version of an input (4 or 6: netassay's own, never a user's text)."""
    return 6 if v == 6 else 4


def _sizes(x: tuple[str, int]) -> list[int]:
    from netassay.shared.sizes import parse_sizes

    return parse_sizes(x[0], _ip(x[1]))


def _sizes_ok(x: tuple[str, int], out: list[int]) -> None:
    from netassay.names import min_frame_bytes
    from netassay.shared.sizes import parse_sizes

    lo = min_frame_bytes(_ip(x[1]))
    need(bool(out) and all(lo <= s <= 1518 for s in out), "sizes are sendable", out)
    need(len(set(out)) == len(out), "sizes are distinct", out)
    again = parse_sizes(",".join(map(str, out)), _ip(x[1]))
    need(again == out, "the sizes, written back, read the same", (out, again))


def _frame_size(v: Any) -> Any:
    """``size`` of a config file's [testbed] and a campaign cell (``--size``'s check)."""
    from netassay.config import TestbedConfig
    from netassay.params import declared

    p = next(p for _, p in declared(TestbedConfig) if p.name == "size")
    return p.canonical(v)


def _frame_size_ok(x: Any, v: Any) -> None:
    need(isinstance(v, int) and not isinstance(v, bool) and 64 <= v <= 1518, "a size", v)


def _imix(x: tuple[str, int]) -> Any:
    from netassay.imix import parse_imix

    return parse_imix(x[0], _ip(x[1]))


def _imix_ok(x: tuple[str, int], mix: Any) -> None:
    from netassay.imix import MAX_CYCLE, cycle, from_spec, parse_imix, spec
    from netassay.names import min_frame_bytes

    lo = min_frame_bytes(_ip(x[1]))
    need(0 < len(mix) <= 16, "1..16 sizes", mix)
    need(all(lo <= s <= 1518 and w >= 1 for s, w in mix), "sizes sendable, weights >= 1", mix)
    need(len({s for s, _ in mix}) == len(mix), "sizes distinct", mix)
    need(sum(w for _, w in mix) <= MAX_CYCLE, "a cycle of at most 10000 frames", mix)
    text = spec(mix)
    need(parse_imix(text, _ip(x[1])) == mix, "the mix's spec reads as the same mix", text)
    need(from_spec(text) == mix, "a stored spec reads as the same mix", text)
    need(len(cycle(mix)) == sum(w for _, w in mix), "the cycle holds every weight", mix)


def _imix_text() -> st.SearchStrategy[tuple[str, int]]:
    size = st.one_of(st.integers(0, 2000).map(str), _number())
    weight = st.one_of(st.integers(0, 12000).map(str), _number())
    pair = st.builds(lambda a, s, b, w: f"{a}{s}{b}:{w}", _SPACE, size, _SPACE, weight)
    text = st.one_of(
        st.sampled_from(["simple", "SIMPLE", " simple ", "imix", ""]),
        st.lists(pair, min_size=1, max_size=18).map(",".join),
        st.lists(st.tuples(st.integers(60, 1520), st.integers(1, 700)), max_size=17).map(
            lambda ps: ",".join(f"{s}:{w}" for s, w in ps)
        ),
    )
    return st.tuples(mutated(text, 2), st.sampled_from([4, 6]))


def _tokens(x: str) -> Any:
    from netassay.loads import tokens

    return tokens(x, "--rates")


def _tokens_ok(x: str, out: list[tuple[str, float, str]]) -> None:
    need(0 < len(out) <= 10_000, "1..10000 loads", len(out))
    for kind, v, _ in out:
        need(kind in ("pps", "bit", "share"), "a known kind", kind)
        need(_finite_positive(v), "a load is finite and positive", (kind, v))
        need(kind != "share" or v <= 1, "a share is at most 100%", v)


def _line_rate(x: str) -> float:
    from netassay.loads import parse_line_rate

    return parse_line_rate(x)


def _layer(x: Any) -> int:
    from netassay.loads import parse_layer

    return parse_layer(x)


def _check_load(x: Any) -> Any:
    from netassay.loads import check_load

    return check_load("--rate")(x)


def _check_loads(x: Any) -> Any:
    from netassay.loads import check_loads

    return check_loads("--rates")(x)


def _checked_ok(x: Any, out: Any) -> None:
    vals = out if isinstance(out, tuple) else (out,)
    for v in vals:
        v = v[1] if isinstance(v, tuple) else v
        need(_finite_positive(v), "a load is finite and positive", out)


def _in_frames(x: tuple[str, float, int, float | None]) -> list[float]:
    from netassay.shared.rates import Frames, loads

    text, frame, layer, line = x  # the frame, layer and line rate are netassay's own:
    frame = frame if isinstance(frame, float) and 64 <= frame <= 1518 else 64.0  # in range
    layer = layer if layer in (1, 2) else 1
    line = line if isinstance(line, float) and 1e6 <= line <= 1e12 else None
    return loads(text, Frames(frame, layer, f"{frame:g}-byte frames", line, "--line-rate"))


def _in_frames_ok(x: Any, out: list[float]) -> None:
    from netassay.loads import tokens

    kinds = [k for k, _, _ in tokens(x[0], "--rates")]
    need(all(_finite_positive(v) for v in out), "loads finite and positive", out[:5])
    converted = [v for k, v in zip(kinds, out, strict=True) if k != "pps"]
    need(all(v >= 1 and v == int(v) for v in converted), "whole frames/s, at least 1", out[:5])
    need(all(b > a for a, b in itertools.pairwise(out)), "loads increase", out[:5])


@functools.cache
def _load_text() -> st.SearchStrategy[str]:
    return mutated(_lists(_token(LOAD_UNITS)), 2)


@functools.cache
def _toml_scalar() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=True, allow_infinity=True),
        _token(RATE_UNITS + TIME_UNITS + LOAD_UNITS),
        st.text(max_size=12),
    )


@functools.cache
def _toml_value() -> st.SearchStrategy[Any]:
    return st.one_of(
        _toml_scalar(),
        st.lists(_toml_scalar(), max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "size"]), _toml_scalar(), max_size=2),
    )


# -- TOML files -----------------------------------------------------------------------------
def toml_text(value: Any) -> str:
    """A value as TOML writes it (for building the fuzzers' files; independent of the
    writer under test)."""
    if value is None:  # TOML has no null: an empty string in its place
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, once DEL is escaped too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_text(k)} = {toml_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_file(sections: list[tuple[str, dict[str, Any]]]) -> str:
    out = []
    for name, values in sections:
        out.append(name if name.startswith("[") else f"[{name}]")
        out += [f"{k} = {toml_text(v)}" for k, v in values.items()]
        out.append("")
    return "\n".join(out)


@st.composite
def _config_text(draw: Any) -> str:
    from netassay.config import METHOD_SECTIONS, RENAMED, AnalysisConfig, TestbedConfig
    from netassay.params import declared

    keys = {
        "analysis": [f.name for f in __import__("dataclasses").fields(AnalysisConfig)],
        "testbed": [p.name for _, p in declared(TestbedConfig)] + list(RENAMED["testbed"]),
        "cluster": ["tls_dir"],
        **{m: ["rates", "runs", "duration", "rate", "max_load", "label", "db"]
           for m in METHOD_SECTIONS},
        "nosuch": ["x"],
    }  # fmt: skip
    good = {
        "pdr": st.floats(0, 1),
        "eta": st.floats(0, 1),
        "entry_factor": st.floats(0, 10),
        "mode": st.sampled_from(["described", "published", "other"]),
        "size": st.integers(0, 2000),
        "ip": st.sampled_from([4, 6, 5]),
        "imix": st.sampled_from(["simple", "64:7,590:4", "10:1", "64:1,64:1"]),
        "tls_dir": st.text(max_size=8),
        "sut_cap": _token(RATE_UNITS),
        "rates": _lists(_token(LOAD_UNITS)),
        "rate": _token(LOAD_UNITS),
    }
    sections = []
    for name in draw(st.lists(st.sampled_from(sorted(keys)), max_size=4, unique=True)):
        chosen = draw(st.lists(st.sampled_from(keys[name]), max_size=4, unique=True))
        values = {k: draw(st.one_of(good.get(k, _toml_value()), _toml_value())) for k in chosen}
        sections.append((name, values))
    return draw(mutated(st.just(toml_file(sections)), 2))


def _config(text: str) -> Any:
    from netassay.config import load_config

    with _file(text, "netassay.toml") as path:
        return path, load_config(path, resolve=False)


@functools.cache
def _shown_defaults() -> dict[str, dict[str, Any]]:
    """What 'config show' prints of each method's section by default."""
    from netassay import methods as registry
    from netassay.config import METHOD_SECTIONS
    from netassay.methods.base import defaults

    shown = {m.name: defaults(m.request) for m in registry.methods()}
    return {k: v for k, v in shown.items() if k in METHOD_SECTIONS}


def _config_ok(text: str, out: Any) -> None:
    from netassay.config import load_config, to_toml

    _, cfg = out
    shown = _shown_defaults()
    written = to_toml(cfg, shown)
    with _file(written, "shown.toml") as path:
        try:
            again = load_config(path, resolve=False)
        except NetassayError as exc:
            raise PropertyFailed("config show's output is a config file", exc.line()) from exc
    need(to_toml(again, shown) == written, "config show's output reads back the same", written)
    need(again.analysis == cfg.analysis, "the analysis reads back the same")
    need(again.testbed == cfg.testbed, "the testbed knobs read back the same")


@st.composite
def _campaign_text(draw: Any) -> str:
    from netassay import methods as registry
    from netassay.campaign import spec

    methods = [m.name for m in registry.campaign_methods()]
    method = draw(st.sampled_from([*methods, "nosuch"]))
    keys = sorted(spec.params(method)) if method in methods else ["rates"]
    keys += ["nosuch_key", "rate", "sizes"]
    value = st.one_of(
        _toml_value(),
        _token(LOAD_UNITS + TIME_UNITS),
        st.sampled_from([4, 6, 64, 128, 1518, "simple", "router", "xdp-router", "pin-2cpu"]),
    )
    head: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        head["name"] = draw(st.one_of(st.just("fuzz"), st.text(max_size=6)))
    if draw(st.booleans()):
        head["method"] = method
    for k in draw(st.lists(st.sampled_from(["repetitions", "seed", "description", "x"]),
                           max_size=2, unique=True)):  # fmt: skip
        head[k] = draw(st.one_of(st.integers(-2, 2000), _toml_scalar()))
    sections = [("campaign", head)] if draw(st.integers(0, 9)) else []
    fixed = {k: draw(value) for k in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))}
    if fixed or draw(st.booleans()):
        sections.append(("fixed", fixed))
    factor_keys = draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
    factors = {k: draw(st.lists(value, min_size=0, max_size=3)) for k in factor_keys}
    if factors or draw(st.booleans()):
        sections.append(("factors", factors))
    for _ in range(draw(st.integers(0, 2))):
        ks = draw(st.lists(st.sampled_from(keys), max_size=2, unique=True))
        sections.append(("[[cells]]", {k: draw(value) for k in ks}))
    return draw(mutated(st.just(toml_file(sections)), 2))


def _warm() -> None:
    """Import every campaign method before drawing (an import inside a draw uses the
    random module, which hypothesis warns of)."""
    from netassay import methods as registry
    from netassay.campaign import spec

    for m in registry.campaign_methods():
        spec.params(m.name)


EXAMPLES = ROOT / "examples"


@functools.cache
def _example_campaigns() -> list[dict[str, Any]]:
    """The campaign files netassay ships (examples/), as read."""
    import tomllib

    out = []
    for p in sorted(EXAMPLES.glob("*.toml")):
        doc = tomllib.loads(p.read_text())
        if "campaign" in doc:
            out.append(json.loads(json.dumps(doc, default=str)))
    return out


def toml_doc(doc: Any) -> str:
    """A TOML file of a document: its plain keys, then a table per object, a [[key]]
    per object of a list of objects."""
    if not isinstance(doc, dict):
        return toml_text(doc)
    plain = {k: v for k, v in doc.items() if not isinstance(v, dict) and not _tables(v)}
    lines = [f"{toml_text(k)} = {toml_text(v)}" for k, v in plain.items()]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{toml_text(k)}]"]
            lines += [f"{toml_text(a)} = {toml_text(b)}" for a, b in v.items()]
        elif _tables(v):
            for item in v:
                lines += ["", f"[[{toml_text(k)}]]"]
                lines += [f"{toml_text(a)} = {toml_text(b)}" for a, b in item.items()]
    return "\n".join(lines) + "\n"


def _tables(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


@st.composite
def _example_campaign_text(draw: Any) -> str:
    doc = draw(st.sampled_from(_example_campaigns()))
    if draw(st.integers(0, 3)):
        doc = draw(_json_mutated(st.just(doc), 3))
    text = toml_doc(doc)
    return draw(mutated(st.just(text), 1)) if draw(st.integers(0, 4)) == 0 else text


def _campaign(text: str) -> Any:
    from netassay.campaign import order, spec

    c = spec.parse(text, "fuzz.toml")
    seed = c.seed if c.seed is not None else 1
    json.dumps(order.plan_json(c, seed, "set in the file"))
    order.describe(c, seed, "set in the file", 2)
    return c


# -- importers ------------------------------------------------------------------------------
@functools.cache
def _scratch() -> Path:
    """This process's folder for the fuzzers' files (removed when it exits)."""
    shm = Path("/dev/shm")  # memory: thousands of small files a second
    path = Path(tempfile.mkdtemp(prefix="na-fuzz-", dir=shm if shm.is_dir() else None))
    atexit.register(shutil.rmtree, path, True)
    return path


@contextlib.contextmanager
def _file(data: str | bytes, name: str) -> Any:
    """``data`` in a file named ``name`` in a folder of its own (removed after)."""
    folder = Path(tempfile.mkdtemp(dir=_scratch()))
    try:
        path = folder / name
        path.write_bytes(data if isinstance(data, bytes) else _encoded(data))
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


_NAME_PARTS = [
    "_raw_{i}", "_exp_t_{f}", "_k5.15", "_k6.8.1", "_irq_pf0-{i}_pf1-{i}", "_nic_buf_{i}",
    "_tb{i}", "_intel", "_amd", "_vm", "_bare-metal", "_ns", "_as-is", "_class_{w}",
    "_ver_{i}", "_date_2024-01-0{i}", "_{w}",
]  # fmt: skip


@st.composite
def pastrami_name(draw: Any) -> str:
    parts = draw(st.lists(st.sampled_from(_NAME_PARTS), max_size=6))
    num = st.one_of(st.integers(0, 99).map(str), st.sampled_from(["0", "0.0", "9" * 400, "1.5"]))
    word = st.text("abcxyz019-", min_size=1, max_size=5)
    name = draw(st.sampled_from(["clab", "site", "x", ""])) + "".join(
        p.format(i=draw(st.integers(0, 99)), f=draw(num), w=draw(word)) for p in parts
    )
    return draw(st.sampled_from([name + ".txt", name, name + ".TXT"]))[:200] or "x.txt"


@st.composite
def pastrami_bytes(draw: Any) -> bytes:
    lines = []
    rate = 0
    for _ in range(draw(st.integers(0, 5))):
        rate += draw(st.integers(-5, 500_000))
        k = draw(st.integers(0, 4))
        runs = [
            [draw(st.integers(-1, 3_000_000)), draw(st.integers(-1, 3_000_000)),
             draw(st.integers(-1, 50_000))]
            for _ in range(k)
        ]  # fmt: skip
        lines.append([[rate, draw(st.integers(-1, 50_000))], *runs])
    if draw(st.booleans()):
        lines = draw(_json_mutated(st.just(lines)))
    if not isinstance(lines, list):
        lines = [lines]
    sep = draw(st.sampled_from([", ", ",", " , "]))
    text = "\n".join(json.dumps(x, separators=(sep, ":")) for x in lines)
    text += draw(st.sampled_from(["", "\n", "\n\n", "\r\n", " "]))
    data = text.encode()
    if draw(st.integers(0, 3)) == 0:
        data = draw(mutated(st.just(text), 3)).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        data = draw(st.binary(max_size=64))
    return data


def _pastrami(x: tuple[str, bytes]) -> Any:
    from netassay.store.pastrami import parse_data

    name, data = x
    return parse_data(Path("/fuzz") / name, data)


def _pastrami_ok(x: tuple[str, bytes], exp: Any) -> None:
    import numpy as np

    from netassay.store.pastrami import _fast_columns, _json_columns

    trials = exp.trials
    need(bool(trials), "an accepted file holds trials", x)
    need(all(t.sent > 0 and t.received >= 0 for t in trials), "counters are sane", x)
    d = exp.config["duration_s"]
    need(_finite_positive(d), "a run lasts a finite, positive time", d)
    need(all(math.isfinite(t.achieved_rate_pps) for t in trials), "rates are finite", x)
    body = x[1].rstrip(b" \t\r\n")
    fast = _fast_columns(body)
    if fast is not None and bool(np.all(fast[0][1:] > fast[0][:-1])):
        slow = _json_columns(Path(x[0]), x[1])
        same = all(np.array_equal(a, b) for a, b in zip(fast, slow, strict=True))
        need(same, "the bulk parse reads what json reads", x)


def _json_leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
        st.just([]), st.just({}), st.just("UDP"), st.just("TCP"), st.just(-1),
    )  # fmt: skip


@st.composite
def _json_mutated(draw: Any, base: st.SearchStrategy[Any], max_ops: int = 3) -> Any:
    """A JSON tree from ``base`` with up to ``max_ops`` nodes replaced by another value
    (of any type), deleted, or duplicated."""
    doc = json.loads(json.dumps(draw(base)))

    def nodes(v: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        out = [path]
        if isinstance(v, dict):
            for k, c in v.items():
                out += nodes(c, (*path, k))
        elif isinstance(v, list):
            for i, c in enumerate(v[:8]):
                out += nodes(c, (*path, i))
        return out

    for _ in range(draw(st.integers(1, max_ops))):
        path = draw(st.sampled_from(nodes(doc)))
        if not path:
            doc = draw(_json_leaf()) if draw(st.integers(0, 9)) == 0 else doc
            continue
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        key = path[-1]
        op = draw(st.sampled_from(["set", "set", "del", "wrap"]))
        if op == "set":
            parent[key] = draw(_json_leaf())
        elif op == "del":
            del parent[key]
        else:
            parent[key] = [parent[key]] if draw(st.booleans()) else {"x": parent[key]}
    return doc


@functools.cache
def _iperf3_docs() -> list[Any]:
    """Every iperf3 -J object of the test data (a server's file may hold several)."""
    from netassay.shared.iperf3_json import find_json

    paths = sorted(IPERF3_DATA.glob("*.json"))
    return [doc for p in paths for _, doc in find_json(p.read_text(), str(p))]


@st.composite
def iperf3_text(draw: Any) -> str:
    docs = _iperf3_docs()
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        doc = draw(st.sampled_from(docs))
        if draw(st.integers(0, 3)):
            doc = draw(_json_mutated(st.just(doc), 4))
        parts.append(json.dumps(doc, indent=draw(st.sampled_from([None, 2, 4]))))
    text = draw(st.sampled_from(["", "", "warning: x\n", "$ iperf3 -J\n"])) + "\n".join(parts)
    if draw(st.integers(0, 4)) == 0:
        text = draw(mutated(st.just(text), 3))
    return text


def _iperf3(text: str) -> Any:
    """What ``import iperf3 FILE`` reads before it writes: each file's protocol, the
    TCP cells, the UDP acceptance tests."""
    from netassay.methods.accept import import_iperf3 as accept_import_iperf3
    from netassay.methods.tcp import import_iperf3 as tcp_import_iperf3

    with _file(text, "fuzz.json") as path:
        if accept_import_iperf3.protocol(path) == "TCP":
            return "tcp", tcp_import_iperf3.read_cell(path)
        return "udp", accept_import_iperf3.read_tests([path], None, "ethernet")


def _iperf3_ok(text: str, out: Any) -> None:
    from netassay.methods.accept import import_iperf3 as accept_import_iperf3

    kind, got = out
    if kind != "udp":
        json.dumps(got, allow_nan=True)
        return
    for test in got:
        for run in test.runs:
            need(run.received_bytes is not None, "a run has its bytes", run)
            again = accept_import_iperf3.build_tests(
                accept_import_iperf3.parse_all(run.raw, "raw"), None, "ethernet"
            )
            runs = [r for t in again for r in t.runs]
            need(len(runs) == 1, "a run's raw text reads as one run", len(runs))
            a, b = runs[0], run
            same = (a.received_bytes, a.lost_packets, a.sent_packets, a.offered_bps) == (
                b.received_bytes, b.lost_packets, b.sent_packets, b.offered_bps)  # fmt: skip
            need(same, "a run's raw text reads as the same run", (a, b))


def _csv(rows: list[list[Any]]) -> str:
    return "\n".join(",".join(map(str, r)) for r in rows) + "\n"


_SERVER_HEAD = ["total_bytes_transferidos", "taxa_de_bits_por_segundo", "jitter",
                "total_pacotes_perdidos", "porcentagem_pacotes_perdidos"]  # fmt: skip
_CLIENT_HEAD = ["host_destino", "porta_destino", "protocolo", "pacotes_perdidos",
                "%_pacotes_perdidos", "bytes_transferidos", "bits_por_segundo"]  # fmt: skip


@st.composite
def _cell(draw: Any) -> Any:
    return draw(st.one_of(
        st.integers(0, 2_000_000_000), st.floats(0, 1e10), st.integers(-5, 5),
        st.sampled_from(["", "nan", "inf", "-inf", "x", "1e999", "0", "100", "-0"]),
    ))  # fmt: skip


@st.composite
def monipe_tree(draw: Any) -> dict[str, str | bytes]:
    """A MonIPE results folder: relative path -> its text."""
    files: dict[str, str | bytes] = {}
    test = draw(st.sampled_from(["teste_1", "t"]))
    for _ in range(draw(st.integers(0, 3))):
        n = draw(st.sampled_from(["1", "2", "10", "0", "01", "x", "٣"]))
        folder = f"{test}/rodada_{n}"
        stem = f"{folder}/rodada_{n}-{test}"
        files[f"{folder}/.keep"] = ""
        if draw(st.integers(0, 5)):
            head = draw(st.permutations(_SERVER_HEAD)) if draw(st.booleans()) else _SERVER_HEAD
            head = head[: draw(st.integers(len(head) - 1, len(head)))]
            rows = [[draw(_cell()) for _ in head] for _ in range(draw(st.integers(0, 4)))]
            files[f"{stem}-iperf3_server.csv"] = _csv([list(head), *rows])
        if draw(st.booleans()):
            rows = [["198.18.0.1", 5201, "UDP", *(draw(_cell()) for _ in range(4))]
                    for _ in range(draw(st.integers(0, 4)))]  # fmt: skip
            if rows and draw(st.booleans()):  # the sum row
                rows.append([*rows[0][:3], 0, 0, sum(_num(r[5]) for r in rows), 0])
            files[f"{stem}-iperf3_client.csv"] = _csv([_CLIENT_HEAD, *rows])
        if draw(st.booleans()):
            ncpu = draw(st.integers(0, 3))
            head = [f"CPU_{i}" for i in range(ncpu)] + draw(st.sampled_from([[], ["x"]]))
            rows = [[draw(_cell()) for _ in head] for _ in range(draw(st.integers(0, 3)))]
            files[f"{stem}-mpstat.csv"] = _csv([head, *rows])
        if draw(st.integers(0, 4)) == 0:
            files[f"{stem}-iperf3_server.json"] = draw(iperf3_text())
        if draw(st.integers(0, 6)) == 0:
            files[f"{test}/{test}-experimento.log"] = draw(st.binary(max_size=20))
    for path in list(files):
        if path.endswith(".csv") and draw(st.integers(0, 4)) == 0:
            text = files[path]
            assert isinstance(text, str)
            files[path] = draw(mutated(st.just(text), 3))
    return files


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return 0.0
    return f if math.isfinite(f) else 0.0


@contextlib.contextmanager
def tree(files: dict[str, str | bytes]) -> Any:
    """The files (relative path -> text) in a folder of their own (removed after); a
    path no file system takes (a NUL in it, a file where a folder is) is left out."""
    folder = Path(tempfile.mkdtemp(dir=_scratch()))
    try:
        for rel, data in files.items():
            p = folder / rel
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data if isinstance(data, bytes) else _encoded(data))
            except (OSError, ValueError):
                continue
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _monipe(files: dict[str, str | bytes]) -> Any:
    from netassay.methods.accept.import_monipe import read_tests

    with tree(files) as d:
        return read_tests(d, None, "ethernet")


def _monipe_ok(files: Any, tests: Any) -> None:
    for t in tests:
        json.dumps([r.raw for r in t.runs])
        for r in t.runs:
            need(all(math.isfinite(iv.end_s) for iv in r.intervals), "finite times", r)
            need(r.received_bytes is None or r.received_bytes >= 0, "bytes >= 0", r)


@st.composite
def ping_text(draw: Any) -> str:
    host = draw(st.sampled_from(["198.18.0.2", "2001:2::2", "x", "198.18.0.2:"]))
    lines = []
    if draw(st.integers(0, 3)):
        lines.append(f"PING {host} ({host}) {draw(st.integers(0, 70000))}"
                     f"({draw(st.integers(0, 70000))}) bytes of data.")  # fmt: skip
    t = 1700000000.0
    num = st.one_of(st.floats(0, 1e4).map(lambda f: f"{f:.3f}"), st.sampled_from(
        ["0", ".", "1.2.3", "..", "9" * 400, "0.000"]))  # fmt: skip
    sent = 0
    for _ in range(draw(st.integers(0, 6))):
        t += draw(st.floats(-1, 2))
        stamp = f"[{t:.6f}] " if draw(st.integers(0, 3)) else ""
        kind = draw(st.integers(0, 9))
        seq = draw(st.one_of(st.integers(0, 10), st.integers(0, 2**70)))
        if kind < 7:
            sent += 1
            dup = " (DUP!)" if kind == 6 else ""
            lines.append(f"{stamp}64 bytes from {host}: icmp_seq={seq} ttl=64 "
                         f"time={draw(num)} ms{dup}")  # fmt: skip
        elif kind == 7:
            lines.append(f"{stamp}From {host} icmp_seq={seq} Destination Host Unreachable")
        else:
            lines.append(f"{stamp}no answer yet for icmp_seq={seq}")
    if draw(st.integers(0, 3)):
        lines.append(f"--- {host} ping statistics ---")
        tx, rx = draw(st.integers(0, 10)), draw(st.sampled_from([sent, 0, 3]))
        dup = draw(st.sampled_from(["", ", +1 duplicates"]))
        lines.append(f"{tx} packets transmitted, {rx} received{dup}, 0% packet loss, time 9ms")
        lines.append("rtt min/avg/max/mdev = 0.1/0.2/0.3/0.0 ms")
    return draw(mutated(st.just("\n".join(lines) + "\n"), 3))


def _ping(text: str) -> Any:
    from netassay.methods.rtt.ping_import import parse, record_of

    run = parse(text, "fuzz.txt")
    return run, record_of(run, Path("fuzz.txt"))


def _ping_ok(text: str, out: Any) -> None:
    run, rec = out
    need(all(v >= 0 for v in run.rtts_ns), "round trips are not negative", run.rtts_ns[:5])
    json.dumps([rec.config, rec.summary], allow_nan=False)
    need(rec.trial.sent >= 0 and rec.trial.received >= 0, "counts are not negative", rec.trial)


# -- the targets ----------------------------------------------------------------------------
@functools.cache
def _frames_input() -> st.SearchStrategy[tuple[str, float, int, float | None]]:
    return st.tuples(
        _load_text(), st.sampled_from([64.0, 84.0, 355.8, 1518.0]), st.sampled_from([1, 2]),
        st.one_of(st.none(), st.sampled_from([1e9, 1e10, 1e6, 25e9])),
    )  # fmt: skip


TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target("rate", lambda: mutated(_token(RATE_UNITS), 2), _rate, (UsageError,), _rate_ok),
        Target(
            "rates",
            lambda: mutated(_lists(_token(RATE_UNITS)), 2),
            _rates,
            (UsageError,),
            _rates_ok,
        ),
        Target(
            "duration",
            lambda: mutated(_token(TIME_UNITS), 2),
            _duration,
            (UsageError,),
            _duration_ok,
        ),
        Target("pause", lambda: mutated(_token(TIME_UNITS), 2), _pause, (UsageError,), _pause_ok),
        Target(
            "sizes",
            lambda: st.tuples(
                mutated(
                    st.one_of(
                        _lists(st.integers(0, 2000).map(str)),
                        _lists(_number()),
                        st.sampled_from(["rfc2544", "RFC2544 ", "rfc"]),
                    ),
                    2,
                ),
                st.sampled_from([4, 6]),
            ),
            _sizes,
            (UsageError,),
            _sizes_ok,
        ),
        Target(
            "frame_size",
            lambda: st.one_of(st.integers(0, 2000), _toml_value()),
            _frame_size,
            (ValueError,),
            _frame_size_ok,
        ),
        Target("imix", _imix_text, _imix, (UsageError,), _imix_ok),
        Target("load_tokens", _load_text, _tokens, (UsageError,), _tokens_ok),
        Target("load_in_frames", _frames_input, _in_frames, (UsageError,), _in_frames_ok),
        Target(
            "line_rate", lambda: mutated(_token(LOAD_UNITS), 2), _line_rate, (UsageError,), _rate_ok
        ),
        Target(
            "layer",
            lambda: st.one_of(_toml_scalar(), st.sampled_from(["l1", "L2", "1", " l2 ", "l3"])),
            _layer,
            (UsageError,),
        ),
        Target(
            "load_check",
            lambda: st.one_of(_toml_value(), _load_text()),
            _check_load,
            (ValueError,),
            _checked_ok,
        ),
        Target(
            "loads_check",
            lambda: st.one_of(_toml_value(), _load_text()),
            _check_loads,
            (ValueError,),
            _checked_ok,
        ),
        Target("config_toml", _config_text, _config, (InputError,), _config_ok),
        Target(
            "campaign_toml",
            lambda: _warm() or st.one_of(_campaign_text(), _example_campaign_text()),
            _campaign,
            (InputError,),
            lines=0,
        ),
        Target(
            "pastrami",
            lambda: st.tuples(pastrami_name(), pastrami_bytes()),
            _pastrami,
            (InputError,),
            _pastrami_ok,
        ),
        Target("iperf3", iperf3_text, _iperf3, (InputError,), _iperf3_ok),
        Target("monipe", monipe_tree, _monipe, (InputError,), _monipe_ok),
        Target("ping", ping_text, _ping, (InputError,), _ping_ok),
    ]
}
