"""A capture to replay (``--pcap FILE``): what netassay-gen sends of it in each loop,
as ``netassay-gen --pcap FILE --describe`` reads it (the one reader of the file: the
frames it skips and the ones it marks are the sender's own), and its sha256.

A replayed frame is counted by the XDP sink when it is *marked*: a UDP frame with room
for netassay's payload (``docs/pcap.md``). A trial on a capture counts its loss over
the marked frames; its rate is every frame's.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.errors import UsageError
from netassay.traffic.generator import find_generator

# the testbed's addresses of each IP version (what --describe checks a family against)
_ADDRS = {4: ("198.18.0.2", "198.19.0.2"), 6: ("2001:2::2", "2001:2:0:1::2")}


@dataclass(frozen=True)
class Capture:
    """What a replay of a capture sends in each loop."""

    path: str  # absolute
    sha256: str
    records: int  # in the file
    frames: int  # sent in each loop
    marked: int  # of them, the ones the sink counts
    skipped: dict[str, int]  # by why (netassay-gen's keys)
    per_size: dict[int, int]  # frames of each size in a loop (bytes without FCS)
    marked_per_size: dict[int, int]
    mean_bytes: float  # the mean frame (without FCS)

    def metadata(self) -> dict[str, Any]:
        """What an experiment's metadata keeps of it."""
        return {
            "path": self.path,
            "sha256": self.sha256,
            "records": self.records,
            "frames": self.frames,
            "marked": self.marked,
            "skipped": self.skipped,
            "per_size": {str(k): v for k, v in self.per_size.items()},
            "marked_per_size": {str(k): v for k, v in self.marked_per_size.items()},
            "mean_bytes": self.mean_bytes,
        }


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe(path: str | Path, ip_version: int, mtu: int = 1500) -> Capture:
    """The capture at ``path`` as a replay of IPv``ip_version`` frames sends it; one
    line (UsageError) when it cannot be read or holds nothing to send, or nothing the
    sink counts."""
    full = str(Path(path).resolve())
    src, dst = _ADDRS[ip_version]
    argv = [find_generator(), "--pcap", full, "--src", src, "--dst", dst, "--describe",
            "--mtu-bytes", str(mtu)]  # fmt: skip
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if cp.returncode != 0:
        line = (cp.stderr.strip().splitlines() or [f"exit {cp.returncode}"])[-1]
        raise UsageError(
            f"--pcap {path} cannot be replayed",
            line.removeprefix("netassay-gen: ").removeprefix(f"--pcap {full}: "),
            "give a libpcap or pcapng capture of Ethernet frames (tcpdump -w)",
        )
    d = json.loads(cp.stdout)
    if not d["pcap_marked"]:
        raise UsageError(
            f"--pcap {path} has nothing the sink counts",
            f"none of its {d['pcap_frames']} IPv{ip_version} frames is a UDP frame with 22 "
            "bytes of payload or more, the frames netassay marks and counts",
            "capture UDP traffic too (see docs/pcap.md)",
        )
    return Capture(
        path=full,
        sha256=sha256(full),
        records=int(d["pcap_records"]),
        frames=int(d["pcap_frames"]),
        marked=int(d["pcap_marked"]),
        skipped={k: int(v) for k, v in d["pcap_skipped"].items()},
        per_size={int(k): int(v) for k, v in d["sent_per_size"].items()},
        marked_per_size={int(k): int(v) for k, v in d["marked_per_size"].items()},
        mean_bytes=float(d["mean_bytes"]),
    )
