"""docs/reference.md is every command's --help as netassay prints it, and the keys its
declarations give; 'make reference' rewrites it (docs/reference.py)."""

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
SECTIONS = dict(
    re.findall(r"\n## (netassay[^\n]*)\n\n```text\n(.*?)\n```\n", REFERENCE.read_text(), re.S)
)


@pytest.mark.slow
def test_the_reference_is_what_make_reference_writes():
    ref = runpy.run_path(str(ROOT / "docs" / "reference.py"))
    assert ref["render"]() == REFERENCE.read_text(), (
        "docs/reference.md is stale: run 'make reference'"
    )


def test_every_command_has_its_section():
    assert len(SECTIONS) > 35 and "netassay sweep" in SECTIONS and "netassay db check" in SECTIONS


@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_each_section_is_the_commands_help(title):
    """The command line itself, run as a user runs it, prints what the page says."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    exe = Path(sys.executable).parent / "netassay"
    cp = subprocess.run([str(exe), *title.split()[1:], "--help"], capture_output=True,
                        text=True, timeout=60, env=env)  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    shown = "\n".join(line.rstrip() for line in cp.stdout.splitlines()).strip("\n")
    assert shown == SECTIONS[title]
