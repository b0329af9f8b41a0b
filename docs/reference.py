"""Write docs/reference.md, the command-line reference, from the commands themselves.

    .venv/bin/python docs/reference.py          # or: make reference
    .venv/bin/python docs/reference.py --check  # exit 1 when docs/reference.md is stale

Every command's section is its ``--help`` as netassay prints it (100 columns, no
colour), and a method's section also lists the keys a config file's section and a
campaign file take for its flags, read from the same declarations (``params.param``)
the options are made from: the help, the reference and the keys have one source.
``tests/integration/test_reference.py`` runs each ``--help`` and holds this file to it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "reference.md"
WIDTH = "100"

HEAD = """# Command-line reference

Every command and its options, as `netassay COMMAND --help` prints them: this page is
written from the commands' own declarations by `make reference` (`docs/reference.py`),
and a test fails when the two differ. A method's section ends with the keys its flags
have in a config file's section (`[sweep]`, `[testbed]`, ...) and in a campaign file
(`[fixed]`, `[factors]`, `[[cells]]`).

Options of the root command come before the command: `netassay --config FILE sweep ...`
(`--config` is also taken after it). Exit codes are in
[Getting started](getting-started.md#exit-codes).
"""


def commands() -> Iterator[tuple[list[str], object]]:
    """(path, click command) of every command, depth first, in the order --help lists them."""
    import typer

    from netassay.cli import _flag_help, app

    root = typer.main.get_command(app)
    _flag_help(root)

    def walk(path: list[str], cmd: object) -> Iterator[tuple[list[str], object]]:
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk([*path, name], sub)

    yield from walk([], root)


def help_text(path: list[str]) -> str:
    """``netassay PATH --help`` as the command line prints it (run in this process)."""
    from netassay.cli import main

    os.environ["COLUMNS"] = WIDTH
    os.environ.pop("FORCE_COLOR", None)
    os.environ["NO_COLOR"] = "1"
    out, argv0 = io.StringIO(), sys.argv[0]
    sys.argv[0] = "netassay"  # the program's name in the usage line, as the shell runs it
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([*path, "--help"])
    finally:
        sys.argv[0] = argv0
    return tidy(out.getvalue())


def tidy(text: str) -> str:
    """Help text without the padding at the end of its lines and around it."""
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def keys(name: str) -> list[tuple[str, str, str]]:
    """(flag, key, where) of a method's declared parameters: its request's, the run
    options a config file's section may set, and the testbed knobs it takes; where: its
    config file section (when it has one) and a campaign's cells (when it runs as one)."""
    from netassay import methods
    from netassay.config import METHOD_SECTIONS, TestbedConfig
    from netassay.invoke import FILE_RUN_OPTIONS
    from netassay.methods.base import RunOptions
    from netassay.params import declared

    m = methods.method(name)

    def where(section: str | None, campaign: bool) -> str:
        said = [f"`[{section}]`"] if section else []
        return ", ".join(said + (["campaign"] if campaign and m.campaign else []))

    own = name if name in METHOD_SECTIONS else None
    rows = [(p.flag, p.name, where(own, p.campaign)) for _, p in declared(m.request) if p.flag]
    rows += [(p.flag, p.name, where(own, False)) for f, p in declared(RunOptions)
             if p.flag and f.name in FILE_RUN_OPTIONS and f.name in m.run_options]  # fmt: skip
    if m.knobs is TestbedConfig:
        rows += [(p.flag, p.name, where("testbed", p.campaign))
                 for _, p in declared(TestbedConfig) if p.flag]  # fmt: skip
    return [r for r in rows if r[2]]


def render() -> str:
    from netassay import methods

    parts = [HEAD]
    for path, cmd in commands():
        title = " ".join(["netassay", *path])
        parts.append(f"\n## {title}\n\n```text\n{help_text(path)}\n```\n")
        if len(path) == 1 and path[0] in methods.REGISTRY and getattr(cmd, "params", None):
            rows = keys(path[0])
            if rows:
                parts.append("\n| flag | key in a file | where |\n|---|---|---|\n")
                parts.extend(f"| `{f}` | `{k}` | {w} |\n" for f, k, w in rows)
    return "".join(parts)


def main() -> int:
    text = render()
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != text:
            print(f"{OUT} is stale: run 'make reference'", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"{OUT}: {text.count(chr(10) + '## ')} commands")
    return 0


if __name__ == "__main__":
    sys.exit(main())
