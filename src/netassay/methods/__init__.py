"""The measurement methods: one package each, one shape (``methods.base.Method``), and
this registry. Everything outside a method's package finds it here, by its name or by
the kind of experiment it stored; adding a method is a package and one line below.

A method's module is imported when it is first asked for: a command that runs one
method does not pay for the others' imports (MLRsearch, scipy). The kinds each method
stores are written here too (``KINDS``, checked against each ``METHOD.kinds`` by
tests/integration/test_every_method.py), so that finding a kind's method, or the
methods of a store's kinds (a report), imports only those.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from netassay.errors import UsageError
from netassay.store.paths import store_paths

if TYPE_CHECKING:  # the same modules, for the layer contract and type checkers
    import netassay.methods.accept.export
    import netassay.methods.accept.method
    import netassay.methods.batching.method
    import netassay.methods.burst.method
    import netassay.methods.doctor.method
    import netassay.methods.flood.export
    import netassay.methods.flood.method
    import netassay.methods.reconfig.method
    import netassay.methods.recovery.method
    import netassay.methods.rtt.export
    import netassay.methods.rtt.method
    import netassay.methods.search.method
    import netassay.methods.soak.export
    import netassay.methods.soak.method
    import netassay.methods.sweep.method
    import netassay.methods.tcp.method
    from netassay.methods.base import Method
    from netassay.store.db import Store
    from netassay.store.export import Kind

# name -> the module whose METHOD it is, in the order results are shown
REGISTRY = {
    "sweep": "netassay.methods.sweep.method",
    "search": "netassay.methods.search.method",
    "rtt": "netassay.methods.rtt.method",
    "accept": "netassay.methods.accept.method",
    "flood": "netassay.methods.flood.method",
    "soak": "netassay.methods.soak.method",
    "batching": "netassay.methods.batching.method",
    "doctor": "netassay.methods.doctor.method",
    "tcp": "netassay.methods.tcp.method",
    "burst": "netassay.methods.burst.method",
    "recovery": "netassay.methods.recovery.method",
    "reconfig": "netassay.methods.reconfig.method",
}


# name -> the experiment kinds it stores (its METHOD.kinds), known without importing it
KINDS = {
    "sweep": ("sweep", "pastrami-import"),
    "search": ("search",),
    "rtt": ("rtt",),
    "accept": ("accept",),
    "flood": ("mrr",),
    "soak": ("soak",),
    "batching": ("batching",),
    "doctor": ("doctor",),
    "tcp": ("tcp",),
    "burst": ("burst",),
    "recovery": ("recovery",),
    "reconfig": ("reconfig",),
}

# the methods whose ``analyse`` reads inputs other than stores (PASTRAMI raw files)
READS_FILES = ("sweep",)

# the methods whose ``compare`` sets a store's results side by side outside a campaign,
# in the order ``compare`` shows them (every other method's compares nothing)
COMPARES = ("rtt", "flood", "sweep")


if TYPE_CHECKING:  # mypy holds every registered method to the protocol (never run)

    def _every() -> tuple[Method, ...]:
        return (
            netassay.methods.sweep.method.METHOD,
            netassay.methods.search.method.METHOD,
            netassay.methods.rtt.method.METHOD,
            netassay.methods.accept.method.METHOD,
            netassay.methods.flood.method.METHOD,
            netassay.methods.soak.method.METHOD,
            netassay.methods.batching.method.METHOD,
            netassay.methods.doctor.method.METHOD,
            netassay.methods.tcp.method.METHOD,
            netassay.methods.burst.method.METHOD,
            netassay.methods.recovery.method.METHOD,
            netassay.methods.reconfig.method.METHOD,
        )


def method(name: str) -> Method:
    """The method of that name (UsageError naming the known ones otherwise)."""
    if name not in REGISTRY:
        raise UsageError(f"unknown method '{name}'", f"known: {', '.join(REGISTRY)}", "pick one")
    found: Method = importlib.import_module(REGISTRY[name]).METHOD
    return found


def methods() -> list[Method]:
    """Every method, in the order its results are shown (assess, report)."""
    return [method(name) for name in REGISTRY]


def analysing(inputs: Sequence[Path]) -> list[Method]:
    """The methods with something to say of ``inputs`` (assess, report): all of them
    when a store is among the inputs; only the file readers when none is, so that an
    assessment of raw files does not import the others (MLRsearch, Dask)."""
    if next(store_paths(inputs), None) is not None:
        return methods()
    return [method(name) for name in REGISTRY if name in READS_FILES]


def exports(store: Store) -> list[Kind]:
    """The kinds of row the methods derive from what they stored, for ``export`` beside
    the store's own (a soak's seconds, an rtt run's probes): ``kinds(store)`` of each
    method's ``export`` module, where it has one (only those modules are imported: an
    export does not pay for the methods' own imports)."""
    out: list[Kind] = []
    for module in REGISTRY.values():
        name = module.rsplit(".", 1)[0] + ".export"
        if importlib.util.find_spec(name) is not None:
            out += importlib.import_module(name).kinds(store)
    return out


def of_kind(kind: str) -> Method | None:
    """The method that stores experiments of ``kind`` (None: no method's); only its
    module is imported."""
    return next((method(name) for name in REGISTRY if kind in KINDS[name]), None)


def storing(kinds: Iterable[str]) -> list[Method]:
    """The methods that store experiments of any of ``kinds``, in the order of
    ``methods()``; the others are not imported."""
    kinds = set(kinds)
    return [method(name) for name in REGISTRY if kinds & set(KINDS[name])]


def metric(name: str) -> tuple[str, float, str]:
    """A compared metric's (name in words, scale, axis label), as its method says (the
    methods asked in order, imported as they are asked)."""
    for n in REGISTRY:
        m = method(n)
        if name in m.comparison.names:
            return m.comparison.names[name]
    return (name, 1.0, name)


def comparing() -> list[Method]:
    """The methods whose ``compare`` may show something outside a campaign, in the order
    it is shown; the others are not imported."""
    return [method(name) for name in COMPARES]


def campaign_methods() -> list[Method]:
    """The methods a campaign runs as cells."""
    return [m for m in methods() if m.campaign]
