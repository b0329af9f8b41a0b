"""The scale knobs on the real command line and the real netassay-gen binary: what is
refused (one line, exit 2, nothing built), a scale series run once per value (a dry
run), and netassay-gen's flow flags."""

from __future__ import annotations

import subprocess

import pytest

from netassay.traffic import generator as gen


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        ("sweep", ("--routes", "70000"), "--routes 70,000 with IPv4"),
        ("sweep", ("--sut", "bridge", "--routes", "10"), "--routes with --sut bridge"),
        ("search", ("--nat", "snat"), "--nat snat with --conntrack off"),
        ("sweep", ("--nft-set",), "--nft-set without --nft-rules"),
        ("flood", ("--sut", "xdp-router", "--conntrack", "on"), "--conntrack on with --sut"),
        ("sweep", ("--flows", "2M"), "bad flow count 2,000,000"),
        ("sweep", ("--routes", "1,1k", "--nft-rules", "10,100"), "are both lists"),
        ("sweep", ("--sizes", "64,128", "--routes", "1,10"), "--sizes with a --routes list"),
        ("flood", ("--routes", "1,x"), "'x' is not a count"),
        ("search", ("--flows", "1,1k", "--resume"), "--flows list with --resume"),
    ],
)
def test_a_scale_knob_that_cannot_be_is_one_line_and_builds_nothing(cli, tmp_path, command,
                                                                    args, said):  # fmt: skip
    db = tmp_path / "s.db"
    res = cli(command, *args, "--db", db, "--name", "scl")
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("netassay: ") and said in line, line
    assert not db.exists()
    assert not any(ns.startswith("na-scl-") for ns in _netns())


@pytest.mark.parametrize(
    ("flags", "said", "values"),
    [
        (("--routes", "1,1k,10k"), "--routes", ("1", "1,000", "10,000")),
        (("--sut", "ovs", "--ovs-rules", "0,1k,10k"), "--ovs-rules", ("0", "1,000", "10,000")),
    ],
)
def test_a_series_runs_its_command_once_per_value(cli, tmp_path, flags, said, values):
    res = cli("sweep", *flags, "--rates", "100k", "--runs", "1", "--db",
              tmp_path / "s.db", "--name", "scl", "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    for i, value in enumerate(values, 1):
        assert f"{said} {value} ({i}/3 of the series)" in res.stderr
    knobs = [ln for ln in res.stdout.splitlines() if ln.startswith("testbed 'scl'")]
    key = said.removeprefix("--").replace("-", "_") + "="
    assert [k.split(key)[1].split(",")[0] for k in knobs] == [v.replace(",", "") for v in values]


def test_a_series_value_that_is_no_count_is_refused(cli, tmp_path):
    bad = cli("sweep", "--sut", "ovs", "--ovs-rules", "0,1x", "--db", tmp_path / "s.db",
              "--name", "scl", "--dry-run")  # fmt: skip
    assert bad.returncode == 2 and "'1x' is not a count" in bad.stderr, bad.stderr


def _binary() -> str:
    return gen.find_generator()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--flows", "1000001"], "--flows 1000001 is out of range: use 1..1000000"),
        (["--flow-order", "shuffled"], "--flow-order 'shuffled' is unknown"),
        (["--dsts", "0"], "--dsts 0 --dst-step 1 is out of range"),
        (["--dsts", "2", "--dst-step", "4294967295"], "would run past the last 32 bits"),
    ],
)
def test_the_generators_flow_flags_refuse_in_one_line(args, needle):
    send = ["--dev", "x", "--dst-mac", "02:00:00:00:00:01", "--src", "198.18.0.2", "--dst",
            "198.19.1.1", "--rate", "1k", "--duration", "1"]  # fmt: skip
    cp = subprocess.run([_binary(), *send, *args], capture_output=True, text=True, check=False)
    assert cp.returncode == 2, cp.stderr
    assert needle in cp.stderr and len(cp.stderr.strip().splitlines()) == 1


def test_flows_whose_destinations_leave_the_benchmarking_range_are_refused():
    # 300 destinations from 198.19.255.0 run into 198.20.0.0: not a benchmarking address
    cp = subprocess.run(
        [_binary(), "--dev", "lo", "--dst-mac", "02:00:00:00:00:01", "--src", "198.18.0.2",
         "--dst", "198.19.255.0", "--rate", "1k", "--count", "1", "--flows", "300", "--dsts",
         "300", "--allow-host-netns"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cp.returncode == 2 and "refusing --dst 198.20.0.43" in cp.stderr, cp.stderr


def test_the_sinks_flow_count_needs_its_flows():
    cp = subprocess.run([_binary(), "--xdp-sink", "--dev", "x", "--dsts", "4"],
                        capture_output=True, text=True, check=False)  # fmt: skip
    assert cp.returncode == 2 and "add --count-flows N" in cp.stderr, cp.stderr


def test_the_generators_help_documents_its_flow_flags():
    cp = subprocess.run([_binary(), "--help"], capture_output=True, text=True, check=False)
    for flag in ("--flow-order", "--flow-seed", "--dsts", "--dst-step", "--count-flows",
                 "--verify"):  # fmt: skip
        assert flag in cp.stdout, flag
    assert "max 1000000" in cp.stdout
