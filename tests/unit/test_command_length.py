"""Every function of the command line (``src/netassay/cli/*.py``) is at most 40 lines: a
command turns flags into a request, runs the method and prints its view; what is longer
belongs in the method or in a helper of its own.

A function's length is counted from its ``def`` line to its last line, both included:
its signature, docstring, body, comments and blank lines inside it; its decorators are
not counted. Nested functions are counted on their own too (and inside the function
that holds them)."""

from __future__ import annotations

import ast
from pathlib import Path

import netassay.cli

CLI = Path(netassay.cli.__file__).parent
LIMIT = 40


def lengths(source: str) -> list[tuple[int, str]]:
    """(lines, name) of every function in ``source``, longest first."""
    found = [
        (node.end_lineno - node.lineno + 1, node.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]
    return sorted(found, reverse=True)


def test_the_count_takes_the_signature_and_body_and_leaves_the_decorators_out():
    source = (
        "@app.command()\n@other\ndef f(\n    a: int,\n) -> None:\n    '''doc'''\n\n    return\n"
    )
    assert lengths(source) == [(6, "f")]
    nested = "def outer():\n    def inner():\n        pass\n    return inner\n"
    assert lengths(nested) == [(4, "outer"), (2, "inner")]


def test_no_command_line_function_is_over_40_lines():
    over = [
        f"{path.name}:{name} is {n} lines"
        for path in sorted(CLI.glob("*.py"))
        for n, name in lengths(path.read_text())
        if n > LIMIT
    ]
    assert len(list(CLI.glob("*.py"))) > 10  # the walk found the command line's modules
    assert not over, "; ".join(over)
