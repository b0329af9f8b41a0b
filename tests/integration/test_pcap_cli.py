"""``--pcap FILE`` on the command line: netassay-gen's ``--describe`` of captures
tcpdump wrote on this machine (``gen/tests/data``), the knob refused in one line where
it cannot be honoured (nothing built, nothing stored), and the bit rates of a dry run
converted with the capture's mean frame."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest

from netassay.errors import UsageError
from netassay.traffic import pcap
from netassay.traffic.generator import find_generator

DATA = Path(__file__).resolve().parents[2] / "gen" / "tests" / "data"
US, NS = DATA / "tcpdump-us.pcap", DATA / "tcpdump-ns.pcap"


def test_describe_says_what_a_replay_sends_per_loop():
    c = pcap.describe(US, 4)
    # the capture: 30 records, 2 ARP, 18 IPv6 (ICMPv6, netassay-gen's UDP of 200 bytes),
    # 10 IPv4 (4 ICMP of 142 bytes, 3 port unreachable of 156, 3 netassay UDP of 128)
    assert (c.records, c.frames, c.marked) == (30, 10, 3)
    assert c.skipped["not_ip"] == 2 and c.skipped["other_family"] == 18
    assert c.per_size == {128: 3, 142: 4, 156: 3} and c.marked_per_size == {128: 3}
    assert c.mean_bytes == pytest.approx((3 * 128 + 4 * 142 + 3 * 156) / 10)
    assert len(c.sha256) == 64 and c.metadata()["path"] == str(US)
    six = pcap.describe(NS, 6)
    assert six.marked_per_size == {200: 2} and six.skipped["other_family"] > 0


def _libpcap(path: Path, frame: bytes) -> Path:
    """A libpcap file (us) holding ``frame`` once."""
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    path.write_bytes(head + struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
    return path


# an ICMP echo request from 198.18.0.2 to 198.19.0.2 (no frame the sink counts)
ICMP = (
    bytes(12) + b"\x08\x00" + bytes([0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 1, 0, 0])
    + bytes([198, 18, 0, 2, 198, 19, 0, 2]) + bytes([8, 0, 0xF7, 0xFF, 0, 0, 0, 0])
)  # fmt: skip


def test_a_capture_with_nothing_to_count_or_no_capture_at_all_is_one_line(tmp_path):
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    _libpcap(tmp_path / "arp.pcap", arp)
    with pytest.raises(UsageError) as e:
        pcap.describe(tmp_path / "arp.pcap", 4)
    assert "none of its 1 frames can be sent (1 not_ip)" in str(e.value)
    (tmp_path / "text.pcap").write_text("not a capture\n")
    with pytest.raises(UsageError) as e:
        pcap.describe(tmp_path / "text.pcap", 4)
    assert "not a libpcap or pcapng file" in str(e.value)
    # ICMP only: sent, but nothing marked for the sink to count
    with pytest.raises(UsageError) as e:
        pcap.describe(_libpcap(tmp_path / "icmp.pcap", ICMP), 4)
    assert "has nothing the sink counts" in str(e.value)
    # frames above the MTU are skipped: the 128-byte UDP frames at an MTU of 113
    assert pcap.describe(US, 4, mtu=114).marked_per_size == {128: 3}
    with pytest.raises(UsageError) as e:
        pcap.describe(US, 4, mtu=113)
    assert "none of its 30 frames can be sent (2 not_ip, 18 other_family, 10 too_big)" in str(
        e.value
    )


def test_describe_refuses_what_it_does_not_take():
    argv = [find_generator(), "--pcap", str(US), "--src", "198.18.0.2", "--dst", "198.19.0.2",
            "--describe", "--rate", "1k"]  # fmt: skip
    cp = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.strip() == (
        "netassay-gen: --rate is not a --describe option: it takes --pcap, --src, --dst "
        "and --mtu-bytes"
    )
    ok = subprocess.run(argv[:-2], capture_output=True, text=True, check=True)
    assert json.loads(ok.stdout)["pcap_frames"] == 10


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        ("sweep", ("--size", "128"), "--pcap with --size: a capture gives the frame sizes"),
        ("search", ("--imix", "simple"), "--pcap with --imix"),
        ("soak", ("--rate", "10k", "--flows", "4"), "--pcap with --flows"),
        ("sweep", ("--sink", "nft"), "--pcap with --sink nft"),
        ("sweep", ("--sizes", "rfc2544"), "--sizes with --pcap"),
        ("sweep", ("--bidirectional",), "--bidirectional with --pcap"),
        ("flood", (), "a flood cannot send --pcap"),
        ("doctor", (), "doctor takes no --pcap"),
    ],
)
def test_pcap_where_it_cannot_be_honoured_is_one_line_exit_2(cli, tmp_path, command, args, said):
    db = tmp_path / "p.db"
    res = cli(command, "--pcap", US, *args, "--db", db, "--name", "pcp")
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("netassay: ") and said in line, line
    assert not db.exists()
    assert not any(ns.startswith("na-pcp-") for ns in _netns())


def test_a_capture_the_sink_cannot_count_is_refused_before_anything_is_built(cli, tmp_path):
    icmp = _libpcap(tmp_path / "icmp.pcap", ICMP)
    db = tmp_path / "i.db"
    res = cli("sweep", "--pcap", icmp, "--rates", "1k", "--db", db, "--name", "pci")
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "has nothing the sink counts" in line and not db.exists()


def test_a_load_in_bits_uses_the_captures_mean_frame(cli, tmp_path):
    # 10 Mbit/s at L1: the capture's mean frame, 142 B, + 4 B FCS + 20 B of preamble/IFG
    res = cli("sweep", "--pcap", US, "--rates", "10Mbps", "--dry-run", "--db", tmp_path / "d.db",
              "--name", "pcd")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"loads (1): {10e6 / (166 * 8) / 1e3:.2f} kpps" in res.stdout, res.stdout
    assert f"pcap={US}" in res.stdout
