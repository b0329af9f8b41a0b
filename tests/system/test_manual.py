"""The manual's commands that need root and traffic (blocks marked '<!-- run: system
-->'), run in order, one fresh folder per page; their examples are short by design.
Every namespace they build is removed, also when one fails; what they keep of the host
(the delay line's limit) goes to the session's state folder (``lab_env``)."""

import subprocess
import sys
from collections import defaultdict

import pytest
from tests.manual import blocks, check, workdir

pytestmark = pytest.mark.system

PAGES = defaultdict(list)
for _b in blocks():
    if _b.tier == "system":
        PAGES[_b.page].append(_b)


# The pages whose commands take over ~10 s on a quiet host (sweeps, searches, floods,
# campaigns, the kit's methods, a TCP path): 'make test-slow' runs them
# (docs/development.md, "How long the tests take").
SLOW_PAGES = {
    "README.md", "docs/campaigns.md", "docs/trust.md", "docs/getting-started.md",
    "docs/methods/accept.md", "docs/methods/batching.md", "docs/methods/burst.md",
    "docs/methods/flood.md", "docs/methods/latency.md", "docs/methods/reconfig.md",
    "docs/methods/recovery.md", "docs/methods/rtt.md", "docs/methods/search.md",
    "docs/methods/soak.md", "docs/methods/sweep.md", "docs/methods/tcp.md",
}  # fmt: skip


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=pytest.mark.slow) if p in SLOW_PAGES else p for p in sorted(PAGES)],
)
def test_the_pages_commands_run_as_shown(page, tmp_path, lab_env):
    cwd = workdir(tmp_path / "manual")
    try:
        for block in PAGES[page]:
            check(block, cwd)
    finally:
        subprocess.run([sys.executable, "-m", "netassay", "testbed", "cleanup"], cwd=cwd,
                       capture_output=True, timeout=120)  # fmt: skip
