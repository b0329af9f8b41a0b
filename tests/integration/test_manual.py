"""The manual's commands that need no root (README.md and docs/: blocks marked
'<!-- run: integration -->'), run in order, one fresh folder per page."""

from collections import defaultdict

import pytest
from tests.manual import blocks, check, workdir

PAGES = defaultdict(list)
for _b in blocks():
    if _b.tier == "integration":
        PAGES[_b.page].append(_b)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_pages_commands_run_as_shown(page, tmp_path):
    cwd = workdir(tmp_path / "manual")
    for block in PAGES[page]:
        check(block, cwd)
