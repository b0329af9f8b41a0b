"""The SUT's own counters, read through a command the user gives (for example over SSH).

The command runs before and after every trial, from an argument list (``shlex`` splits
the text as a shell would, but no shell runs it). Its output is stored verbatim; where
it parses, as JSON (nested objects and lists flattened to ``a/b/0/c`` keys) or as
``name value`` lines (``name: value`` too; a third column, such as nstat's rate, is
ignored), the numbers are stored too and their deltas computed. A command that fails
or times out never stops a trial: the trial stores what happened and says so.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from netassay.errors import NetassayError, UsageError
from netassay.proc import run

TIMEOUT_S = 30.0
MAX_STORED_CHARS = 200_000  # the verbatim output kept per read


def parse_command(text: str) -> list[str]:
    """The command's argument list, or one line saying why it cannot be one."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(
            f"bad --sut-counters-cmd {text!r}", str(exc), "quote it as for a shell"
        ) from exc
    if not argv:
        raise UsageError(
            "empty --sut-counters-cmd", "it names no program", "e.g. 'ssh r1 nstat -az'"
        )
    return argv


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _flatten_json(doc: Any, prefix: str, out: dict[str, int | float]) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            _flatten_json(v, f"{prefix}{k}/", out)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            _flatten_json(v, f"{prefix}{i}/", out)
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        out[prefix.rstrip("/")] = doc


def parse_values(text: str) -> dict[str, int | float]:
    """The numbers in a counters command's output ({} when nothing parses)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if doc is not None:
            out: dict[str, int | float] = {}
            _flatten_json(doc, "", out)
            return out
    values: dict[str, int | float] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 2 or cols[0].startswith("#"):
            continue
        value = _number(cols[1])
        if value is not None:
            values[cols[0].removesuffix(":")] = value
    return values


def value_deltas(
    before: dict[str, int | float], after: dict[str, int | float]
) -> dict[str, int | float]:
    """``after - before`` of every value present in both that moved."""
    return {k: after[k] - v for k, v in before.items() if k in after and after[k] != v}


def read(argv: list[str]) -> dict[str, Any]:
    """Run the command once: its exit code, output (verbatim, capped) and numbers."""
    try:
        res = run(argv, check=False, timeout=TIMEOUT_S)
    except NetassayError as exc:
        return {"error": exc.line()}
    out: dict[str, Any] = {
        "returncode": res.returncode,
        "stdout": res.stdout[:MAX_STORED_CHARS],
        "stderr": res.stderr[-2000:],
    }
    if len(res.stdout) > MAX_STORED_CHARS:
        out["stdout_truncated_chars"] = len(res.stdout)
    if res.returncode == 0:
        out["values"] = parse_values(res.stdout)
    return out


def trial_record(
    argv: list[str], before: dict[str, Any], after: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """What a trial stores of the SUT's counters (before and after verbatim, the deltas)
    and a warning when a read failed."""
    rec: dict[str, Any] = {"command": argv, "before": before, "after": after}
    warnings = []
    failed = [w for w, r in (("before", before), ("after", after)) if "values" not in r]
    if failed:
        why = next(
            (r.get("error") or f"exit {r.get('returncode')}")
            for w, r in (("before", before), ("after", after))
            if w in failed
        )
        warnings.append(
            f"the SUT counters command failed {' and '.join(failed)} the trial ({why}); "
            "no SUT counter deltas"
        )
    else:
        rec["deltas"] = value_deltas(before["values"], after["values"])
    return rec, warnings
