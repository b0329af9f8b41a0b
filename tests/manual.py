"""The commands the manual shows (README.md and docs/), read from its fenced ``console``
blocks, and a runner for them.

A block is preceded by ``<!-- run: TIER -->``: ``integration``, ``system`` or ``none:
why``. Its commands are its ``$ `` lines (a line ending in ``\\`` goes on on the next).
They run through bash in one folder per page and tier, which holds links to the
repository's ``examples/`` and ``tests/``, with the venv's commands first on the PATH;
a command's comment ``# exits N`` states its exit code (0 otherwise).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"(?:<!-- run: ([^\n]*?) -->\n)?[ \t]*```console\n(.*?)\n[ \t]*```", re.S)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int
    tier: str  # integration, system, none, or "" (no marker)
    why: str
    commands: tuple[str, ...]


def blocks(pages: list[Path] = PAGES) -> list[Block]:
    out = []
    for page in pages:
        text = page.read_text()
        for m in _BLOCK.finditer(text):
            marker = (m.group(1) or "").strip()
            tier, _, why = marker.partition(":")
            cmds, cur = [], ""
            for raw in m.group(2).splitlines():
                line = raw.strip()
                if cur:
                    cur += " " + line
                elif line.startswith("$ "):
                    cur = line[2:]
                else:
                    continue  # output shown after a command
                if cur.endswith("\\"):
                    cur = cur[:-1].rstrip()
                    continue
                cmds.append(cur)
                cur = ""
            out.append(Block(str(page.relative_to(ROOT)), text.count("\n", 0, m.start()) + 1,
                             tier.strip(), why.strip(), tuple(cmds)))  # fmt: skip
    return out


def expected_exit(command: str) -> int:
    m = re.search(r"#.*\bexits (\d+)\b", command)
    return int(m.group(1)) if m else 0


def workdir(where: Path) -> Path:
    """A folder to run a page's commands in, with the repository's examples and tests."""
    where.mkdir(parents=True, exist_ok=True)
    for name in ("examples", "tests"):
        link = where / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    return where


def run(command: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    command = re.sub(r"^sudo ", "", command)
    return subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def check(block: Block, cwd: Path) -> None:
    """Run a block's commands in turn; fail on the first exit that is not the stated one."""
    for command in block.commands:
        cp = run(command, cwd)
        want = expected_exit(command)
        assert cp.returncode == want, (
            f"{block.page}:{block.line}: '{command}' exited {cp.returncode}, not {want}\n"
            f"{cp.stdout[-2000:]}\n{cp.stderr[-3000:]}"
        )
