"""Every usage error the parser finds exits 2 with one line (click's message, what to do),
never 70.

Each kind runs the real CLI in a child process (typer parses with its own copy of
click, whose exceptions are not click's: a handler that only knew click's missed them).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from tests.conftest import ROOT


def _usage_error(res, needle: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "internal error" not in res.stderr
    assert "Traceback" not in res.stderr
    assert needle in res.stderr, res.stderr
    (line,) = res.stderr.splitlines()  # one line, as every error of netassay's
    assert line.startswith("netassay: ") and "--help" in line, line
    assert res.stdout == ""
    return res.stderr


def test_unknown_command(cli):
    err = _usage_error(cli("serch"), "No such command 'serch'")
    assert "Did you mean 'search'" in err


def test_unknown_option(cli):
    err = _usage_error(cli("assess", "--bogus-flag", "x"), "unknown flag --bogus-flag")
    assert "'netassay assess'" in err
    near = _usage_error(cli("sweep", "--rats", "1k"), "unknown flag --rats")
    assert "did you mean --rates?" in near


def test_missing_argument(cli):
    _usage_error(cli("assess"), "Missing argument")


def test_bad_argument_value(cli):
    _usage_error(cli("sweep", "--runs", "abc", "--dry-run"), "Invalid value for '--runs'")


def test_missing_option_value(cli):
    _usage_error(cli("sweep", "--runs"), "Option '--runs' requires an argument")


@pytest.mark.parametrize("args", [(), ("testbed",), ("db",)])
def test_no_arguments_print_help_and_exit_2(cli, args):
    res = cli(*args)
    assert res.returncode == 2, res.stderr
    assert "internal error" not in res.stderr
    assert "Usage" in res.stdout + res.stderr


def test_help_and_version_still_exit_0(cli):
    assert cli("--help").returncode == 0
    assert cli("sweep", "--help").returncode == 0
    assert cli("--version").returncode == 0


def test_config_show_in_a_child_process_prints_auto(cli):
    res = cli("config", "show", timeout=60)
    assert res.returncode == 0, res.stderr
    assert 'pinning = "auto"' in res.stdout


@pytest.mark.slow
def test_a_config_file_sets_a_methods_parameters_and_flags_win(cli, tmp_path):
    """[sweep] and [testbed] keys are the flags' (units as typed); --config works
    after the command too; a flag given wins over the file."""
    f = tmp_path / "c.toml"
    f.write_text('[testbed]\nsize = 128\n[sweep]\nrates = ["10k", "20k"]\nruns = 3\n'
                 'duration = "1s"\n')  # fmt: skip
    out = cli("sweep", "--dry-run", "--config", f, check=True).stdout
    assert "size_bytes=128" in out and "loads (2): 10 kpps, 20 kpps" in out
    assert "runs per load: 3; trial: 1 s" in out
    out = cli("--config", f, "sweep", "--dry-run", "--runs", "5", "--size", "256", check=True)
    assert "size_bytes=256" in out.stdout and "runs per load: 5" in out.stdout


def test_a_bad_key_of_a_methods_section_names_its_line(cli, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[sweep]\nruns = 3\n\n[search]\nwidht = "1%"\n')
    res = cli("sweep", "--dry-run", "--config", f)
    assert res.returncode == 3
    assert res.stderr.strip() == (
        f"netassay: {f}:5: unknown key 'widht' in [search]: did you mean 'width'? known keys: "
        "goals, min_load, "
        "max_load, exceed_ratio, width, initial_duration, final_duration, duration_sum, "
        "time_cap, settle, then_verify, verify_runs, verify_duration, verify_span, "
        "verify_loads, bidirectional, max_latency, latency, layer, line_rate, name, db, retries, "
        "peak_check; fix the spelling or remove the key"
    )


@pytest.mark.slow
def test_config_show_is_a_file_config_takes(cli, tmp_path):
    shown = cli("config", "show", check=True).stdout
    assert "[testbed]" in shown and "ip = 4" in shown and 'duration = "2s"' in shown
    f = tmp_path / "shown.toml"
    f.write_text(shown)
    for command in (["sweep", "--dry-run"], ["search", "--dry-run"]):
        assert cli(*command, "--config", f).returncode == 0


@pytest.mark.slow
def test_help_as_the_tool_is(cli):
    """The command list keeps each summary whole; flags show no '<bool>'; flood offers
    only the SUTs it takes; --help itself is a flag too; every import requires --db."""
    wide = {"env": {**os.environ, "COLUMNS": "250"}}
    listing = cli("--help", **wide).stdout
    assert "verdict per experiment (and what every other method stored" in listing
    for command in ("sweep", "search", "accept", "rtt", "flood", "assess", "db check"):
        shown = cli(*command.split(), "--help", **wide).stdout
        flags = [ln for ln in shown.splitlines() if "<bool>" in ln]
        assert flags == [], (command, flags)
    sut = [ln for ln in cli("flood", "--help", **wide).stdout.splitlines() if "--sut " in ln]
    assert sut and "bridge" not in sut[0] and "xdp-router" in sut[0]
    res = cli("import", "ping", "x.txt")
    assert res.returncode == 2 and "--db" in res.stderr


@pytest.mark.slow
def test_imports_count_the_contract_at_the_ethernet_layer_by_default(cli, tmp_path):
    """One default for the layer: accept's (ethernet), not the payload."""
    f = ROOT / "tests" / "data" / "iperf3" / "udp-50M-server.json"
    db = tmp_path / "a.db"
    cli("import", "iperf3", f, "--db", db, "--contract", "50M", check=True)
    (obj,) = [json.loads(line) for line in cli("assess", db, "--json").stdout.splitlines()]
    assert obj["layer"] == "ethernet"


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        ("sweep", ("--sizes", "60"), "--sizes 60: 60 bytes cannot be sent over IPv4"),
        ("search", ("--sizes", "64", "--ip", "6"), "64 bytes cannot be sent over IPv6"),
        ("flood", ("--sizes", "64,x"), "'x' is not a frame size"),
        ("sweep", ("--sizes", "rfc2544", "--size", "128"), "--sizes with --size"),
        ("search", ("--sizes", "rfc2544", "--resume"), "--sizes with --resume"),
    ],
)
def test_a_bad_size_series_is_one_line_and_builds_nothing(cli, tmp_path, command, args, said):
    db = tmp_path / "s.db"
    res = cli(command, *args, "--db", db)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("netassay: ") and said in line, line
    assert not db.exists()  # nothing built, nothing stored


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--cc", "vegas"), "congestion control 'vegas' is not available here"),
        (("--window", "64M"), "over the kernel's maximum"),
        (("--delay", "5s"), "bad --delay 5000ms"),
        (("--loss", "2"), "bad --loss '2'"),
        (("--window", "12x"), "bad window '12x'"),
        (("--bottleneck", "10"), "bad --bottleneck 10"),
    ],
)
def test_a_tcp_cell_this_kernel_cannot_run_is_one_line_and_builds_nothing(cli, tmp_path, args,
                                                                           said):  # fmt: skip
    db = tmp_path / "t.db"
    _refused_in_one_line(cli("tcp", *args, "--db", db, "--name", "zz"), said, db, "zz")


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        ("sweep", ("--imix", "64:7,594"), "--imix 64:7,594: '594' is not SIZE:WEIGHT"),
        ("sweep", ("--imix", "60:7,590:4"), "60 bytes cannot be sent over IPv4 (64..1518)"),
        ("search", ("--imix", "simple", "--size", "64"), "--imix with --size"),
        ("sweep", ("--imix", "64:1", "--ip", "6"), "64 bytes cannot be sent over IPv6"),
        ("sweep", ("--imix", "64:0"), "the weight of 64 is 0"),
        ("sweep", ("--imix", "simple", "--sizes", "rfc2544"), "--sizes with --imix"),
        ("sweep", ("--imix", "simple", "--sink", "nft"), "--imix with --sink nft"),
        ("flood", ("--imix", "simple"), "a flood cannot send --imix"),
        ("doctor", ("--imix", "simple"), "doctor takes no --imix"),
    ],
)
def test_a_bad_imix_is_one_line_exit_2_and_builds_nothing(cli, tmp_path, command, args, said):
    db = tmp_path / "m.db"
    _refused_in_one_line(cli(command, *args, "--db", db, "--name", "imx"), said, db, "imx")


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        ("sweep", ("--bidirectional", "--imix", "simple"), "--bidirectional with --imix"),
        ("latency", ("--bidirectional",), "--bidirectional with --at (the latency command's"),
        ("sweep", ("--bidirectional", "--latency", "--at", "50%"), "--bidirectional with --at"),
        ("sweep", ("--bidirectional", "--sink", "nft"), "--bidirectional with --sink nft"),
        ("sweep", ("--bidirectional", "--sut", "xdp-router"), "--bidirectional with --sut xdp-"),
        ("search", ("--bidirectional", "--imix", "simple"), "--bidirectional with --imix"),
        ("search", ("--bidirectional", "--sink", "xdp+nft"), "--bidirectional with --sink xdp+"),
        ("search", ("--bidirectional", "--sut", "xdp-router"), "--bidirectional with --sut xdp-"),
        ("flood", ("--bidirectional", "--sut", "xdp-router"), "flood --bidirectional with --sut"),
        ("flood", ("--bidirectional", "--sink", "xdp+nft"), "flood --bidirectional with --sink"),
        ("sweep", ("--sut", "xdp-router", "--sut-cap-reverse", "10k"), "--sut-cap-reverse with"),
        ("doctor", ("--sut-cap-reverse", "10k"), "doctor takes no --sut-cap-reverse"),
    ],
)
def test_bidirectional_where_it_cannot_be_honoured_is_one_line_exit_2(
    cli, tmp_path, command, args, said
):
    db = tmp_path / "b.db"
    _refused_in_one_line(cli(command, *args, "--db", db, "--name", "bid"), said, db, "bid")


def _refused_in_one_line(res, said: str, db, name: str) -> None:
    """Exit 2, one line that says ``said``, no store and no namespace of testbed ``name``."""
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("netassay: ") and said in line, line
    assert not db.exists()  # nothing built, nothing stored
    assert not any(ns.startswith(f"na-{name}-") for ns in _netns())


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        ("sweep", ("--rates", "50%"), "--rates 50%: the line rate is unknown"),
        ("sweep", ("--rates", "10%:120%:10%", "--line-rate", "10G"), "is in (0, 100]%"),
        ("sweep", ("--rates", "100k:1Gbps:100k"), "a range's three parts mix units"),
        ("sweep", ("--rates", "2Gbps", "--line-rate", "1G"), "is above the line rate"),
        ("sweep", ("--layer", "l2"), "--layer with loads in frames/s"),
        ("sweep", ("--rates", "1Gbps", "--layer", "l3"), "bad --layer 'l3'"),
        ("sweep", ("--rates", "1Gbps", "--imix", "60:7"), "60 bytes cannot be sent over IPv4"),
        ("search", ("--max-load", "50%"), "--max-load 50%: the line rate is unknown"),
        ("search", ("--max-load", "1Gbps", "--min-load", "2Gbps"), "below"),
        ("soak", ("--rate", "80%"), "--rate 80%: the line rate is unknown"),
        ("soak", ("--rate", "1Gbps", "--line-rate", "fast"), "bad --line-rate 'fast'"),
        ("soak", ("--rate", "10%:20%:10%", "--line-rate", "1G"), "it takes one load"),
    ],
)
def test_a_rate_in_bits_or_shares_that_cannot_be_converted_is_one_line_exit_2(
    cli, tmp_path, command, args, said
):
    db = tmp_path / "r.db"
    _refused_in_one_line(cli(command, *args, "--db", db, "--name", "rte"), said, db, "rte")


def test_a_rate_in_bits_is_converted_with_each_size_of_a_series(cli, tmp_path):
    res = cli("sweep", "--sizes", "64,1514", "--rates", "500Mbps", "--runs", "1",
              "--db", tmp_path / "s.db", "--name", "rte", "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    # 5e8 / (8 * 88) = 710,227 and 5e8 / (8 * 1538) = 40,637 frames/s at L1
    assert "loads (1): 710.2 kpps" in res.stdout and "loads (1): 40.64 kpps" in res.stdout
    l2 = cli("sweep", "--rates", "500Mbps", "--layer", "l2", "--size", "1514", "--runs", "1",
             "--db", tmp_path / "s.db", "--name", "rte", "--dry-run")  # fmt: skip
    assert "loads (1): 41.17 kpps" in l2.stdout, l2.stderr  # 5e8 / (8 * 1518)


def test_a_bidirectional_search_dry_run_says_its_loads_are_aggregate(cli, tmp_path):
    args = ("search", "--bidirectional", "--max-load", "120k", "--then-verify", "--db",
            tmp_path / "b.db", "--name", "bid", "--dry-run")  # fmt: skip
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    assert "--bidirectional: each load, bound and count is both directions' sum" in res.stdout
    assert "(the verify sweep's too)" in res.stdout
    assert json.loads(cli(*args, "--json").stdout)["bidirectional"] is True
    assert not (tmp_path / "b.db").exists()


def test_a_bidirectional_dry_run_says_its_loads_are_per_direction(cli, tmp_path):
    res = cli("sweep", "--bidirectional", "--rates", "20k,60k", "--runs", "2", "--duration",
              "1s", "--db", tmp_path / "b.db", "--name", "bid", "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "packets to send: 160,000" in res.stdout  # (20k + 60k) x 2 runs x 1 s
    assert "each load per direction, both at once (320,000 packets in all)" in res.stdout
