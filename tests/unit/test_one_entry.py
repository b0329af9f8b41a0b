"""A method's Request and RunOptions are resolved in one place (``invoke.resolve``) from a
command's flags and from a campaign cell's settings alike: no command builds them by
steps of its own, and a cell takes the same function.

Read from the code (``ast``): a command that runs a method calls ``runs_with`` (the
command line's door to ``invoke.resolve``), and calls none of the steps ``resolve``
takes (``checked_config``, ``options_of``, ``request_of``, ``named_testbed``) itself."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import netassay.cli
from netassay import invoke

CLI = Path(netassay.cli.__file__).parent
STEPS = {"options_of", "request_of", "named_testbed", "checked_config"}  # resolve's steps


def called(tree: ast.AST) -> set[str]:
    """The names of every function called in ``tree`` (``f()`` and ``x.f()``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
    return out


def runs_a_method(fn: ast.FunctionDef) -> bool:
    """A function that calls ``<METHOD|method>.run(...)``."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "run"
        and isinstance(n.func.value, ast.Name) and n.func.value.id in ("METHOD", "method")
        for n in ast.walk(fn)
    )  # fmt: skip


def commands() -> dict[str, ast.FunctionDef]:
    """Every function of the command line that runs a method, by file:name."""
    out = {}
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and runs_a_method(node):
                out[f"{path.name}:{node.name}"] = node
    return out


def test_the_walk_tells_a_call_and_a_method_run() -> None:
    tree = ast.parse("def c(ctx, given):\n    r = runs_with(ctx, given, 'x')\n    METHOD.run(r)\n")
    (fn,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert runs_a_method(fn) and called(fn) == {"runs_with", "run"}
    other = ast.parse("def c():\n    thing.run()\n").body[0]
    assert isinstance(other, ast.FunctionDef) and not runs_a_method(other)


def test_every_command_resolves_its_run_through_one_function() -> None:
    found = commands()
    # the commands that run a method: the twelve measuring ones at least
    assert len(found) >= 12, sorted(found)
    missing = [k for k, fn in found.items() if "runs_with" not in called(fn)]
    assert not missing, f"runs a method without runs_with: {missing}"
    own_steps = {
        f"{path.name}: {sorted(called(ast.parse(path.read_text())) & STEPS)}"
        for path in sorted(CLI.glob("*.py"))
        if path.name != "common.py" and called(ast.parse(path.read_text())) & STEPS
    }
    assert not own_steps, f"a command takes resolve's steps itself: {own_steps}"


def test_a_campaign_cell_resolves_through_the_same_function() -> None:
    cell = ast.parse(inspect.getsource(invoke.cell))
    assert "resolve" in called(cell)
    assert not called(cell) & {"options_of", "request_of", "load_config"}
