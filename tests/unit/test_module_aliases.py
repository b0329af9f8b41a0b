"""A module is imported under a name that says what it is: its own (``from
netassay.testbed import state``), or its package's and its own where that clashes with a
local (``from netassay.testbed import state as testbed_state``), never one to three
capitals (``as S``, ``as SP``, ``as I3``) nor one lower-case letter (``as s``), which a
reader must look up at the top of the file on every use.

The walk reads every ``.py`` file of ``src/``, ``tests/`` and ``bench/`` with ``ast``
and takes each ``import a.b as X`` and each ``from a import b as X`` whose ``a.b`` is a
module (an alias of a class or a constant, such as ``ExtendedKeyUsageOID as EKU``, is
not a module alias).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHORT = re.compile(r"[A-Z][A-Za-z0-9]{0,2}|[a-z]")


def is_module(name: str) -> bool:
    """Whether the dotted ``name`` is a module or package (not a class or a constant)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is a plain module, not a package
        return False


def short_aliases(source: str, package: str) -> list[tuple[int, str, str]]:
    """(line, module, alias) of each module imported under a short alias in ``source``,
    a file of ``package`` (for relative imports)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, a.asname) for a in node.names if a.asname]
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            found += [(node.lineno, f"{base}.{a.name}", a.asname) for a in node.names if a.asname]
    return [(n, m, a) for n, m, a in found if SHORT.fullmatch(a) and is_module(m)]


def package_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[1:-1] if parts[0] == "src" else parts[:-1])


def test_a_module_under_one_to_three_capitals_or_one_letter_is_found():
    source = (
        "import xml.etree.ElementTree as ET\n"
        "from netassay.testbed import state as S, topology\n"
        "from netassay import names as Nm\n"
        "import netassay.units as u\n"
        "def f():\n    from netassay.campaign import spec as SP\n"
    )
    assert short_aliases(source, "tests.unit") == [
        (1, "xml.etree.ElementTree", "ET"),
        (2, "netassay.testbed.state", "S"),
        (3, "netassay.names", "Nm"),
        (4, "netassay.units", "u"),
        (6, "netassay.campaign.spec", "SP"),
    ]
    relative = "from . import state as S\nfrom .state import STATE_DIR as SD\n"
    assert short_aliases(relative, "netassay.testbed") == [(1, "netassay.testbed.state", "S")]


def test_a_clear_name_or_an_alias_of_a_class_passes():
    source = (
        "from netassay.testbed import state as testbed_state\n"
        "import numpy as np\n"
        "from netassay.names import RTT_EP_DEV as EP_DEV\n"
        "from cryptography.x509.oid import ExtendedKeyUsageOID as EKU\n"
        "from collections import OrderedDict as OD\n"
    )
    assert short_aliases(source, "tests.unit") == []


def test_no_module_has_an_alias_of_one_to_three_capitals():
    files = sorted(p for d in ("src", "tests", "bench") for p in (ROOT / d).rglob("*.py"))
    assert len(files) > 300  # the walk found the package and the tests
    where = {str(p.relative_to(ROOT)): p for p in files}
    found = [
        f"{name}:{line} {module} as {alias}"
        for name, path in where.items()
        for line, module, alias in short_aliases(path.read_text(), package_of(path))
    ]
    assert not found, "; ".join(found)
