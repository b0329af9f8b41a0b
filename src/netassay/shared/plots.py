"""What every method's figures and pages share: a figure saved as PNG and SVG, a file
name from a label, a PNG inlined in a page or referred to with its size (pages work
offline)."""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FORMATS = ("png", "svg")


def save(fig: Any, stem: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Write ``fig`` as stem.png, stem.svg (its folder made), close it; the paths."""
    import matplotlib.pyplot as plt  # deferred: matplotlib; the caller drew with it

    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")  # a label's dots kept in the name
        fig.savefig(path, dpi=110, bbox_inches="tight")
        out.append(path)
    plt.close(fig)
    return out


def rate_unit(rates: Iterable[float]) -> tuple[float, str]:
    """The unit a rate axis is drawn in (its divisor, its name) for the highest finite
    rate of ``rates``: Mpps, kpps or pps."""
    known = [float(r) for r in rates if math.isfinite(r)]
    top = max(known) if known else 1.0
    if top >= 1e6:
        return 1e6, "Mpps"
    if top >= 1e3:
        return 1e3, "kpps"
    return 1.0, "pps"


def slugify(text: str, used: set[str]) -> str:
    """A file name from ``text``, unique among ``used`` (which it joins)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")[:80] or "experiment"
    slug, n = base, 2
    while slug in used:
        slug, n = f"{base}-{n}", n + 1
    used.add(slug)
    return slug


def data_uri(path: Path) -> str:
    """A PNG as a data: URI, so that a page holds its figures."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header."""
    with path.open("rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24])
