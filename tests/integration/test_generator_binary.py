"""The real netassay-gen binary's command line: its help, its usage errors (one line,
exit 2), its refusal of a foreign destination, its version."""

from __future__ import annotations

import subprocess

import pytest

from netassay.errors import GeneratorError
from netassay.traffic import generator as gen


def _binary() -> str:
    try:
        return gen.find_generator()
    except GeneratorError as e:
        pytest.fail(f"netassay-gen is not built ({e}): run 'make setup'")


def test_binary_help_documents_every_flag() -> None:
    cp = subprocess.run([_binary(), "--help"], capture_output=True, text=True, check=False)
    assert cp.returncode == 0
    for flag in (
        "--dev", "--dst-mac", "--src-mac", "--src", "--dst", "--rate", "--duration", "--count",
        "--size", "--flows", "--src-port", "--dst-port", "--burst", "--batch", "--technique",
        "--best-effort", "--allow-any-dst", "--allow-host-netns", "--cpu", "--receive",
        "--idle-timeout", "--expect", "--ring-mb", "--schedule-rate", "--json", "--xdp-sink",
    ):  # fmt: skip
        assert flag in cp.stdout, flag
    assert "WITHOUT the 4-byte FCS" in cp.stdout
    assert "3  the rate was not kept" in cp.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--dev", "x", "--bogus"], "unknown argument '--bogus'"),
        (["--dev", "x", "--dst-mac", "zz", "--src", "198.18.0.2", "--dst", "198.19.0.2",
          "--rate", "1k", "--duration", "1"], "is not a MAC"),
        (["--dev", "x", "--dst-mac", "02:00:00:00:00:01", "--src", "198.18.0.2", "--dst",
          "198.19.0.2", "--rate", "fast", "--duration", "1"], "is not a rate"),
        (["--dev", "x", "--dst-mac", "02:00:00:00:00:01", "--src", "198.18.0.2", "--dst",
          "198.19.0.2", "--rate", "1k"], "--duration (or --count) is required"),
        (["--receive", "--dev", "x", "--rate", "1k"], "is a send option"),
        (["--xdp-sink", "--dev", "x", "--rate", "1k"], "does not apply to --xdp-sink"),
        (["--xdp-sink", "--dev", "x", "--size", "10"], "out of range for --xdp-sink"),
        (["--dev", "x", "--dst-mac", "02:00:00:00:00:01", "--src", "198.18.0.2", "--dst",
          "198.19.0.2", "--rate", "1k", "--duration", "1", "--technique", "afxdp"],
         "use auto, sendmmsg, txring, xdp or none"),
    ],
)  # fmt: skip
def test_binary_bad_arguments_exit_2_with_one_line(args: list[str], needle: str) -> None:
    cp = subprocess.run([_binary(), *args], capture_output=True, text=True, check=False)
    assert cp.returncode == 2
    assert needle in cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1
    assert cp.stdout == ""


def test_binary_refuses_foreign_destination_before_anything_else() -> None:
    args = ["--dev", "lo", "--dst-mac", "02:00:00:00:00:01", "--src", "10.0.0.1"]
    args += ["--dst", "10.0.0.2", "--rate", "1k", "--duration", "1", "--allow-host-netns"]
    cp = subprocess.run([_binary(), *args], capture_output=True, text=True, check=False)
    assert cp.returncode == 2
    assert "198.18.0.0/15" in cp.stderr and "--allow-any-dst" in cp.stderr


def test_binary_version() -> None:
    cp = subprocess.run([_binary(), "--version"], capture_output=True, text=True, check=False)
    assert cp.returncode == 0 and cp.stdout.startswith("netassay-gen ")
