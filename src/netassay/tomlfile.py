"""TOML files a user writes (the config file, a campaign file): read in one line of
error each, and where each table and key is, so that a problem names its line."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from netassay.errors import InputError


class Lines:
    """Where each table and key of a TOML file is (tomllib keeps no positions)."""

    _HEAD = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"]+)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")

    def __init__(self, text: str) -> None:
        self.at: dict[tuple[str, int, str | None], int] = {}
        table, idx, counts = "", 0, dict[str, int]()
        depth = 0  # inside a multi-line array: its lines hold values, not keys
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if depth == 0 and (m := self._HEAD.match(code)):
                table = m.group(2).strip('"')
                idx = counts.get(table, -1) + 1 if m.group(1) == "[[" else 0
                counts[table] = idx
                self.at.setdefault((table, idx, None), n)
                continue
            if depth == 0 and (m := self._KEY.match(code)):
                self.at.setdefault((table, idx, m.group(1).strip('"')), n)
                code = code[m.end() :]
            depth = max(0, depth + code.count("[") - code.count("]"))

    def line(self, table: str, key: str | None = None, idx: int = 0) -> int:
        return self.at.get((table, idx, key)) or self.at.get((table, idx, None)) or 1


def parse(text: str, origin: str) -> tuple[dict[str, Any], Lines]:
    """The file's tables and where each key is (InputError naming the line)."""
    try:
        return tomllib.loads(text), Lines(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{origin}: not valid TOML", str(exc), "fix the syntax") from exc
    except RecursionError as exc:  # arrays or tables nested thousands deep
        raise InputError(
            f"{origin}: not a file netassay reads", "its values are nested too deep",
            "fix the syntax",
        ) from exc  # fmt: skip


def read(path: str | os.PathLike[str], what: str) -> tuple[dict[str, Any], Lines]:
    """Read ``path`` (a ``what``: 'config file', 'campaign file')."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError as exc:
        raise InputError(f"{p}: no such {what}", "", "check the path") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read the {what}", str(exc), "check the file") from exc
    return parse(text, str(p))
