"""iperf3's ``-J`` output as the importers read it (accept's UDP tests, tcp's TCP
runs): the JSON objects of a file (text before the first skipped) and a document held to
the shape an importer needs, the first value that is not named in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from netassay.errors import InputError

# What a value of iperf3's JSON that an importer reads must be (``shape``).
NUMBER, COUNT, TEXT, FLAG = "a number", "a count", "a string", "a flag"


@dataclass(frozen=True)
class Needed:
    """A key an importer cannot do without (others may be missing or null)."""

    shape: Any


def _kind(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 24 else text[:20] + "..."


def _fits(value: Any, kind: str) -> bool:
    if kind == TEXT:
        return isinstance(value, str)
    if isinstance(value, bool):
        return kind == FLAG
    if kind == FLAG:
        return isinstance(value, int)
    if kind == COUNT:
        return isinstance(value, int) and 0 <= value < 2**63
    return isinstance(value, int | float) and 0 <= value < 1e300  # NUMBER: finite, >= 0


def shape(value: Any, want: Any, path: str = "") -> str | None:
    """Where ``value`` (a JSON document) is not what ``want`` describes: an object's
    keys (a ``Needed`` one must be there; another may be missing or null), a list's
    items, or a leaf's kind (NUMBER, COUNT, TEXT, FLAG); None when it is."""
    if isinstance(want, Needed):
        want = want.shape
    here = path or "the document"
    if isinstance(want, dict):
        if not isinstance(value, dict):
            return f"{here} is {_kind(value)}, not an object"
        for key, sub in want.items():
            if value.get(key) is None:
                if isinstance(sub, Needed):
                    return f"{path + '.' if path else ''}{key} is missing"
                continue
            found = shape(value[key], sub, f"{path}.{key}" if path else key)
            if found:
                return found
        return None
    if isinstance(want, list):
        if not isinstance(value, list):
            return f"{here} is {_kind(value)}, not a list"
        for i, item in enumerate(value):
            found = shape(item, want[0], f"{path}[{i}]")
            if found:
                return found
        return None
    return None if _fits(value, want) else f"{here} is {_kind(value)}, not {want}"


def check_shape(doc: dict[str, Any], want: Any, origin: str) -> None:
    """InputError naming the first value of ``doc`` that is not of the ``want`` shape."""
    found = shape(doc, want)
    if found:
        raise InputError(
            f"{origin}: not the iperf3 JSON netassay reads", found,
            "import the output of iperf3 -J as it wrote it",
        )  # fmt: skip


def find_json(text: str, origin: str) -> list[tuple[str, dict[str, Any]]]:
    """The JSON objects in ``text`` (a server without -1 writes one per test; text before
    the first is skipped): (each one's text, the object)."""
    decoder = json.JSONDecoder()
    pos = 0 if text.startswith("{") else text.find("\n{")
    if pos < 0:
        raise InputError(f"{origin}: no JSON object in it", "", "give the output of iperf3 -J")
    pos = pos if text.startswith("{") else pos + 1
    out = []
    while pos < len(text):
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{origin}: the iperf3 JSON is truncated or malformed",
                f"{exc.msg} at line {exc.lineno} column {exc.colno}",
                "import the whole output of iperf3 -J as it wrote it",
            ) from exc
        except RecursionError as exc:  # objects or arrays thousands deep
            raise InputError(
                f"{origin}: not the iperf3 JSON netassay reads", "it is nested too deep",
                "import the whole output of iperf3 -J as it wrote it",
            ) from exc  # fmt: skip
        if not isinstance(doc, dict):
            raise InputError(f"{origin}: not an iperf3 JSON object", "", "give iperf3 -J output")
        out.append((text[pos:end], doc))
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out
