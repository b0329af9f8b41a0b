"""Fuzz every parser of netassay for a long run and count what breaks.

Each target of tests/fuzzing.py (the importers: PASTRAMI, iperf3, MonIPE, ping; the
config and campaign files; the unit and load parsers) is run on ``--inputs`` inputs
(100,000 by default): first ``--seeds`` drawn by the target's hypothesis strategy
(well-formed inputs, then broken), then mutations of what was tried (characters and
bytes deleted, inserted, replaced, duplicated, cut; JSON values replaced by another
type; numbers pushed to their edges; two inputs spliced): half the time of an input
that was read (the latest 2,000), else of one whose outcome was new when it was tried
(accepted, or refused with a message not seen before, digits left out). Every input
must pass tests/fuzzing.py's ``check``: read, or refused in one line of its class;
never another exception; what is read in range and read back the same. A failure is
counted once per signature (its exception and where netassay raised it, or the
property it broke), with its first input.

netassay-gen's property tests (gen/src/proptests.rs) run with ``--gen-cases`` cases
each (``PROPTEST_CASES``, release build).

    .venv/bin/python bench/fuzz.py                      # every target, 100,000 each
    .venv/bin/python bench/fuzz.py --inputs 2000 rate imix --no-gen

Writes bench/results/fuzz.json (per target: inputs tried, accepted, refused, distinct
failures with an example each, seconds) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "bench" / "results" / "fuzz.json"

_TOKENS = [
    "", "0", "-1", "1e999", "nan", "inf", "9" * 40, "²", "٣", "\x00", "\n", "\r\n", "\t",
    " ", ",", ":", "[", "]", "{", "}", '"', "=", "#", "%", "k", "M", "G", "s", "ms", "bps",
    "[" * 3000, '{"a":' * 3000, "a = " + "[" * 3000,
    "null", "true", "[]", "{}", "é", "\u2003", "\x1f", "\ufeff", "🙂", "-", "+", ".",
]  # fmt: skip
_EDGE_INTS = [0, 1, -1, 2**31, 2**32, 2**53, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30]
_EDGE_FLOATS = [0.0, -0.0, 1e-320, 1e308, math.inf, -math.inf, math.nan, 0.5, -1.5]


def _json_leaf(rng: random.Random) -> Any:
    return rng.choice(
        [None, True, False, rng.choice(_EDGE_INTS), rng.choice(_EDGE_FLOATS), "", "x",
         rng.choice(_TOKENS), [], {}, [1], {"x": 1}, "UDP", "TCP", -1, 0]
    )  # fmt: skip


def _mutate_json(doc: Any, rng: random.Random) -> Any:
    """``doc`` with one node replaced by another type, deleted or wrapped."""
    paths: list[tuple[Any, ...]] = []

    def walk(v: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if len(paths) > 400:
            return
        if isinstance(v, dict):
            for k, c in v.items():
                walk(c, (*path, k))
        elif isinstance(v, list):
            for i, c in enumerate(v[:6]):
                walk(c, (*path, i))

    walk(doc, ())
    path = rng.choice(paths)
    if not path:
        return _json_leaf(rng)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    op = rng.random()
    if op < 0.6:
        parent[path[-1]] = _json_leaf(rng)
    elif op < 0.8:
        del parent[path[-1]]
    else:
        parent[path[-1]] = [parent[path[-1]]]
    return doc


def _mutate_text(s: str, rng: random.Random, corpus_texts: list[str]) -> str:
    stripped = s.lstrip()
    if stripped[:1] in "[{" and rng.random() < 0.3:  # a JSON document: one value changed
        try:
            doc = json.loads(stripped)
        except (ValueError, RecursionError):
            pass
        else:
            return json.dumps(_mutate_json(doc, rng), indent=rng.choice([None, 2]))
    if "\n" in s and rng.random() < 0.3:  # one line of a file changed
        lines = s.split("\n")
        i = rng.randrange(len(lines))
        lines[i] = _mutate_text(lines[i], rng, corpus_texts)
        return "\n".join(lines)
    for _ in range(rng.randint(1, 4)):
        n = len(s)
        i = rng.randint(0, n)
        j = min(n, i + rng.randint(0, 12))
        op = rng.randrange(8)
        if op == 0:
            s = s[:i] + s[j:]
        elif op == 1:
            s = s[:i] + rng.choice(_TOKENS) + s[i:]
        elif op == 2 and i < n:
            s = (
                s[:i]
                + chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 0x3000)]))
                + s[i + 1 :]
            )
        elif op == 3:
            s = s[:j] + s[i:j] + s[j:]
        elif op == 4:
            s = s[:i]
        elif op == 5 and corpus_texts:  # splice another input in
            other = rng.choice(corpus_texts)
            k = rng.randint(0, len(other))
            s = s[:i] + other[k : k + rng.randint(1, 40)] + s[j:]
        elif op == 6:  # a number pushed to an edge
            m = list(re.finditer(r"[0-9]+(?:\.[0-9]+)?", s))
            if m:
                g = rng.choice(m)
                edge = rng.choice(["0", "-1", "1e999", "9" * 30, "0.0", "nan", "65536", "1e-320"])
                s = s[: g.start()] + edge + s[g.end() :]
        else:
            s = s[:i] + s[i:j].upper() + s[j:]
    return s


def mutate(x: Any, rng: random.Random, texts: list[str]) -> Any:
    """A mutation of ``x`` (any nesting of tuples, lists, dicts, text, bytes, numbers)."""
    if isinstance(x, str):
        return _mutate_text(x, rng, texts)
    if isinstance(x, bytes):
        return _mutate_text(x.decode("latin-1"), rng, texts).encode("latin-1", "replace")
    if isinstance(x, bool):
        return not x
    if isinstance(x, int):
        return rng.choice([x + 1, x - 1, -x, x * 2, rng.choice(_EDGE_INTS)])
    if isinstance(x, float):
        return rng.choice([x * 2, -x, x + 1e-9, rng.choice(_EDGE_FLOATS)])
    if isinstance(x, tuple) and x:
        i = rng.randrange(len(x))
        return (*x[:i], mutate(x[i], rng, texts), *x[i + 1 :])
    if isinstance(x, dict) and x:
        out = dict(x)
        key = rng.choice(list(out))
        op = rng.random()
        if op < 0.75:
            out[key] = mutate(out[key], rng, texts)
        elif op < 0.85:
            del out[key]
        elif isinstance(key, str):  # a file under another name
            out[_mutate_text(key, rng, [])[:120] or key] = out[key]
        return out
    return x


def seeds(target: Any, n: int, record: Any) -> None:
    """``n`` inputs drawn by the target's hypothesis strategy, each given to ``record``."""
    from hypothesis import HealthCheck, Phase, given, settings

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(target.strategy())
    def draw(x: Any) -> None:
        record(x)

    draw()


def run_target(name: str, inputs: int, n_seeds: int, seconds: float, seed: int) -> dict[str, Any]:
    import warnings

    from tests.fuzzing import TARGETS, outcome, signature

    warnings.simplefilter("ignore")
    target = TARGETS[name]
    rng = random.Random(seed)
    failures: dict[str, dict[str, Any]] = {}
    counts = {"tried": 0, "accepted": 0, "refused": 0, "failed": 0}
    corpus: list[Any] = []  # an input of each outcome seen
    accepted: list[Any] = []  # the latest inputs read
    texts: list[str] = []
    seen: set[str] = set()
    slowest = 0.0
    t0 = time.monotonic()

    def record(x: Any) -> None:
        nonlocal slowest
        t = time.monotonic()
        try:
            result, said = outcome(target, x)
            key = re.sub(r"[0-9]+", "#", said)[:60] if said else result
            counts[result] += 1
        except Exception as exc:  # every failure is counted, none stops the run
            counts["failed"] += 1
            sig = signature(exc)
            error = f"{type(exc).__name__}: {exc}"[:400]
            f = failures.setdefault(sig, {"count": 0, "input": repr(x)[:600], "error": error})
            f["count"] += 1
            key = sig
        slowest = max(slowest, time.monotonic() - t)
        counts["tried"] += 1
        if key == "accepted":  # inputs read: mutated half the time (see below)
            accepted.append(x)
            del accepted[:-2000]
        if key not in seen or len(corpus) < 50:
            seen.add(key)
            corpus.append(x)
            if isinstance(x, str):
                texts.append(x)
            del corpus[:-5000], texts[:-2000]

    seeds(target, min(n_seeds, inputs), record)
    while counts["tried"] < inputs and time.monotonic() - t0 < seconds:
        x = rng.choice(accepted if accepted and rng.random() < 0.5 else corpus)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            x = mutate(x, rng, texts)
        record(x)
    took = time.monotonic() - t0
    return {
        "inputs": counts["tried"], "accepted": counts["accepted"],
        "refused": counts["refused"], "failed": counts["failed"],
        "distinct_failures": len(failures), "failures": failures,
        "seconds": round(took, 1), "inputs_per_s": round(counts["tried"] / took, 1),
        "slowest_input_s": round(slowest, 3), "seeds": min(n_seeds, inputs),
        "corpus": len(corpus), "stopped_by_time": counts["tried"] < inputs,
    }  # fmt: skip


def _one(args: tuple[str, int, int, float, int]) -> tuple[str, dict[str, Any]]:
    name = args[0]
    res = run_target(*args)
    print(f"  {name}: {res['inputs']} inputs, {res['distinct_failures']} distinct failures, "
          f"{res['seconds']} s", file=sys.stderr, flush=True)  # fmt: skip
    return name, res


def gen_properties(cases: int) -> dict[str, Any]:
    """netassay-gen's property tests, ``cases`` cases each (release build)."""
    env = {**os.environ, "PROPTEST_CASES": str(cases)}
    t0 = time.monotonic()
    cp = subprocess.run(
        ["cargo", "test", "--release", "--manifest-path", str(ROOT / "gen" / "Cargo.toml"),
         "proptests", "--", "--test-threads", "1"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    tests = dict(re.findall(r"^test proptests::(\S+) \.\.\. (\w+)", cp.stdout, re.M))
    failed = re.findall(r"minimal failing input: (.*)", cp.stdout)
    return {"cases_per_property": cases, "properties": tests, "failures": failed,
            "exit": cp.returncode, "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip


def main() -> None:
    from tests.fuzzing import TARGETS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help=f"targets (default all): {', '.join(TARGETS)}")
    ap.add_argument("--inputs", type=int, default=100_000, help="inputs per target")
    ap.add_argument("--seeds", type=int, default=2000, help="inputs drawn by hypothesis first")
    ap.add_argument("--seconds", type=float, default=3600, help="most seconds per target")
    ap.add_argument("--jobs", type=int, default=2, help="targets run side by side")
    ap.add_argument("--seed", type=int, default=1, help="the mutations' random seed")
    ap.add_argument("--gen-cases", type=int, default=100_000, help="cases per gen property")
    ap.add_argument("--no-gen", action="store_true", help="skip netassay-gen's properties")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    names = a.targets or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        ap.error(f"unknown target {unknown[0]}; known: {', '.join(TARGETS)}")
    print(f"fuzzing {len(names)} targets, {a.inputs} inputs each, {a.jobs} at a time",
          file=sys.stderr)  # fmt: skip
    jobs = [(n, a.inputs, a.seeds, a.seconds, a.seed) for n in names]
    t0 = time.monotonic()
    if a.jobs > 1:
        with multiprocessing.get_context("fork").Pool(a.jobs, maxtasksperchild=1) as pool:
            results = dict(pool.imap_unordered(_one, jobs))
    else:
        results = dict(map(_one, jobs))
    out: dict[str, Any] = {
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_1min": os.getloadavg()[0],
        },
        "command": " ".join(sys.argv),
        "seconds": round(time.monotonic() - t0, 1),
        "targets": {n: results[n] for n in names},
    }
    if not a.no_gen:
        print("netassay-gen's property tests ...", file=sys.stderr)
        out["gen"] = gen_properties(a.gen_cases)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{'target':<16} {'inputs':>8} {'accepted':>9} {'refused':>8} {'failures':>9} "
          f"{'s':>7}")  # fmt: skip
    for n in names:
        r = results[n]
        print(f"{n:<16} {r['inputs']:>8} {r['accepted']:>9} {r['refused']:>8} "
              f"{r['distinct_failures']:>9} {r['seconds']:>7}")  # fmt: skip
        for sig, f in r["failures"].items():
            print(f"    {sig} x{f['count']}: {f['error'][:120]}\n      input {f['input'][:160]}")
    if "gen" in out:
        g = out["gen"]
        ok = sum(v == "ok" for v in g["properties"].values())
        print(f"netassay-gen: {ok}/{len(g['properties'])} properties held over "
              f"{g['cases_per_property']} cases each ({g['seconds']} s)")  # fmt: skip
    print(f"written to {a.out}")


if __name__ == "__main__":
    main()
