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
