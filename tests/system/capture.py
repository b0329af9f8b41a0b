"""What the generator's system tests and ``bench/pcap.py`` share: the module-level
checks that skip a file needing root and a built netassay-gen (``need_generator``),
tcpdump writing a capture while a block runs (``tcpdump``) and a reader of the
nanosecond libpcap files it writes (``read_pcap``)."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from netassay.errors import GeneratorError
from netassay.traffic import generator as gen

NS_PCAP_MAGIC = 0xA1B23C4D  # libpcap, little-endian, nanosecond stamps


def need_generator() -> str:
    """netassay-gen's path; the calling test module is skipped, with its reason, when
    it is not root or the generator is not built."""
    if os.geteuid() != 0:
        pytest.skip("system tests need root (network namespaces)", allow_module_level=True)
    try:
        return gen.find_generator()
    except GeneratorError:
        pytest.skip("netassay-gen is not built: run 'make gen'", allow_module_level=True)


@contextmanager
def tcpdump(
    netns: str, dev: str, out: Path, what: str = "udp or icmp", buffer_kib: int | None = None
) -> Iterator[None]:
    """tcpdump -w ``out`` (ns stamps) on ``dev`` in ``netns`` while the block runs
    (``buffer_kib``: its capture buffer, -B); it is stopped (SIGINT, every frame
    written) when the block ends, even on failure. A tcpdump that does not start is a
    RuntimeError with its first line."""
    buffer = ["-B", str(buffer_kib)] if buffer_kib else []
    argv = ["ip", "netns", "exec", netns, "tcpdump", "-i", dev, "-w", str(out), "-n", "-U",
            *buffer, "--immediate-mode", "--time-stamp-precision", "nano", "-Z", "root",
            what]  # fmt: skip
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr is not None
        line = p.stderr.readline()  # "listening on sk0, ..." once it captures
        if "listening on" not in line:
            raise RuntimeError(f"tcpdump did not start: {line}")
        yield
        time.sleep(0.3)  # the last frames reach the capture
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=10)


def read_pcap(path: Path) -> list[tuple[int, bytes]]:
    """(time in ns, bytes) of each record of a little-endian nanosecond libpcap file."""
    b = path.read_bytes()
    magic = struct.unpack_from("<I", b)[0]
    if magic != NS_PCAP_MAGIC:
        raise ValueError(f"{path}: magic {magic:#x}, not a little-endian ns libpcap file")
    out, at = [], 24
    while at < len(b):
        sec, ns, caplen, _ = struct.unpack_from("<IIII", b, at)
        out.append((sec * 1_000_000_000 + ns, b[at + 16 : at + 16 + caplen]))
        at += 16 + caplen
    return out
