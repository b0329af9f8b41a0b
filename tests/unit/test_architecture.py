"""ARCHITECTURE.md quotes the Method protocol; the quote is the code, not a memory of it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from netassay.methods import base

DOC = Path(__file__).resolve().parents[2] / "ARCHITECTURE.md"


def test_architecture_quotes_the_method_protocol_as_it_is() -> None:
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None, "ARCHITECTURE.md lost its quote of the Method protocol"
    assert block.group(1).strip() == inspect.getsource(base.Method).strip()


def test_every_compared_metric_is_named_by_its_method():
    """A campaign's figures and tests name a metric and draw its axis as its method says
    (a flood campaign's figure once was labelled PDR: the names lived outside methods)."""
    from netassay import methods as registry

    for m in registry.campaign_methods():
        for key in (*m.comparison.metrics, m.comparison.figures[0]):
            name, scale, label = m.comparison.names[key]
            assert registry.metric(key) == (name, scale, label) and scale > 0, (m.name, key)
    assert registry.metric("mrr_pps")[2] == "MRR (kpps)"
