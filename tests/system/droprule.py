"""Ground truths the kit's tests put in the SUT by hand: the reconfig tests' change, a
counting nft drop rule in the SUT's forward hook held for a while, then flushed, and what
it counted (the frames lost); and a tbf of known rate, queue and bucket on its egress."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from netassay.names import SUT_OUT

SCRIPT = """set -e
nft add table ip kblk
nft 'add chain ip kblk blk {{ type filter hook forward priority -10; policy accept; }}'
nft add counter ip kblk dropped
nft add rule ip kblk blk counter name dropped drop
sleep {seconds}
nft flush chain ip kblk blk
nft list counter ip kblk dropped > "$1"
nft delete table ip kblk
"""


@dataclass(frozen=True)
class DropRule:
    """The script, and the file it writes the rule's counter to."""

    script: Path
    counted: Path

    @property
    def change(self) -> str:
        """The ``--change`` command that runs it."""
        return f"sh {self.script} {self.counted}"

    def dropped(self) -> int:
        """The frames the rule dropped (once the change has run)."""
        found = re.search(r"packets (\d+)", self.counted.read_text())
        assert found, self.counted.read_text()
        return int(found.group(1))


def drop_rule(tmp_path: Path, held_ms: int = 200) -> DropRule:
    """A change that holds the drop rule for ``held_ms`` (and nft's own time), its
    script and its count in ``tmp_path``."""
    rule = DropRule(tmp_path / "block.sh", tmp_path / "dropped")
    rule.script.write_text(SCRIPT.format(seconds=held_ms / 1000))
    return rule


def sut_tbf(name: str, rate_pps: int, queue: int, bucket: int) -> None:
    """A tbf on testbed ``name``'s SUT egress: 64-byte frames at ``rate_pps``, a queue of
    ``queue`` frames and a bucket of ``bucket`` frames (bytes as tc counts them)."""
    subprocess.run(
        ["ip", "netns", "exec", f"na-{name}-sut", "tc", "qdisc", "replace", "dev", SUT_OUT,
         "root", "tbf", "rate", f"{rate_pps * 64 * 8}bit", "burst", str(bucket * 64),
         "limit", str(queue * 64)], check=True,
    )  # fmt: skip
