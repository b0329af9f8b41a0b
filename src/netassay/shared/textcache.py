"""matplotlib's text caches, shared by every figure a process draws.

matplotlib keeps a text's measured size and a parsed math expression (a log axis's
``10^{-6}``) per renderer, and every ``savefig`` makes a new renderer: each figure of a
report measured and parsed its tick labels again, a sixth of its cost. ``share()`` keys
both caches on what their result depends on (the renderer's kind, the text, its font,
math or not, the dpi) instead of on the renderer object, so the figures a report's
workers draw reuse them. What is drawn is the same to the pixel
(``tests/unit/test_figure_speed.py``).
"""

from __future__ import annotations

import functools
from typing import Any

_METRICS_KEPT = 100_000  # measured texts kept per kind of renderer (then begun afresh)
_shared = False


def share() -> None:
    """Share the text caches from now on in this process (and the processes it forks);
    idempotent."""
    global _shared
    if _shared:
        return
    import matplotlib.mathtext as mathtext
    import matplotlib.text as mtext

    _share_math(mathtext.MathTextParser)
    # matplotlib's private text-metrics function, which its stubs do not declare
    mtext._get_text_metrics_function = _metrics_function  # type: ignore[attr-defined]
    _shared = True


def _share_math(parser_class: Any) -> None:
    """One parse cache per output kind ("path", "raster") for every parser: each
    renderer owns a parser, whose own cache (keyed on the parser) died with it."""
    parse = parser_class._parse_cached.__wrapped__  # the undecorated method
    first: dict[str, Any] = {}

    @functools.lru_cache(maxsize=2048)
    def parsed(kind: str, s: str, dpi: float, prop: Any, antialiased: bool, flags: Any) -> Any:
        return parse(first[kind], s, dpi, prop, antialiased, flags)

    def _parse_cached(
        self: Any, s: str, dpi: float, prop: Any, antialiased: bool, flags: Any
    ) -> Any:
        kind = self._output_type
        first.setdefault(kind, self)  # the parse depends on the kind, never the instance
        return parsed(kind, s, dpi, prop, antialiased, flags)

    parser_class._parse_cached = _parse_cached


_METRICS: dict[tuple[type, ...], dict[tuple[Any, ...], Any]] = {}


def _metrics_function(renderer: Any, _cache: Any = None) -> Any:
    """``matplotlib.text``'s per-renderer metrics cache, kept per kind of renderer
    instead (the measure depends on the kind, the text, its font, math or not and the
    dpi, all in the key; a mixed-mode renderer, the SVG's, by what it wraps)."""
    kind = (type(renderer), type(getattr(renderer, "_vector_renderer", None)))
    kept = _METRICS.setdefault(kind, {})

    def measure(text: str, fontprop: Any, ismath: Any, dpi: float) -> Any:
        key = (text, fontprop, ismath, dpi)  # fontprop: the caller's copy, hashed by value
        size = kept.get(key)
        if size is None:
            if len(kept) >= _METRICS_KEPT:
                kept.clear()
            size = kept[key] = renderer.get_text_width_height_descent(text, fontprop, ismath=ismath)
        return size

    return measure
