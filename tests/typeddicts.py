"""What a TypedDict declares, for tests that hold a dict's keys to its type."""

from __future__ import annotations

from typing import NotRequired, get_origin, get_type_hints


def declared(td: type) -> tuple[set[str], set[str]]:
    """A TypedDict's required and not required keys, read from its annotations (its
    ``__required_keys__`` count a NotRequired key as required when the module defining
    it postpones its annotations, as netassay's do, on Python 3.11)."""
    hints = get_type_hints(td, include_extras=True)
    optional = {k for k, t in hints.items() if get_origin(t) is NotRequired}
    return set(hints) - optional, optional
