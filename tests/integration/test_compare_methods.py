"""compare outside a campaign asks the registry's methods (``Method.compare``): those of
``COMPARES`` set a store's results side by side, in that order, and every other
method's compare is None, on a store holding only its own experiments (real ones:
tests/data/golden)."""

from __future__ import annotations

import pytest
from tests.builders import store_with

from netassay.methods import COMPARES, REGISTRY, comparing, method
from netassay.methods.base import CompareHow
from netassay.store.db import Store

STORED = [name for name in REGISTRY if method(name).kinds]


def test_comparing_is_the_compares_in_their_order():
    assert [m.name for m in comparing()] == list(COMPARES)


@pytest.mark.parametrize("name", STORED)
def test_only_the_compares_set_their_results_side_by_side(name, tmp_path):
    m = method(name)
    db = store_with(tmp_path / f"{name}.db", *m.kinds)
    with Store(db, readonly=True) as st:
        found = m.compare(st, CompareHow())
        others = [o.name for o in comparing() if o is not m and o.compare(st, CompareHow())]
    if name not in COMPARES:
        assert found is None
    else:  # the golden store holds rtt runs, floods and two or more sweeps
        assert found is not None and found.result and found.lines
        assert found.page is None  # no --out: no page
    assert not others, f"{others} compared a store of {name} only"
