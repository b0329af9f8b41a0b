"""The data planes' knobs through the real command line: what a data plane cannot take
is refused in one line, exit 2, before anything is built; a sweep's plan and a campaign
file carry them; the config file knows their keys."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--sut", "ovs", "--pinning", "unpinned"), "--sut ovs with --pinning unpinned"),
        (("--sut", "ovs", "--ovs-port", "dpdk"), "unknown --ovs-port 'dpdk'"),
        (("--sut", "exec"), "--sut exec without --sut-setup"),
        (("--sut", "exec", "--sut-setup", "/nonexistent/up.sh"), "no such file"),
        (("--sut", "testpmd", "--sut-cap", "30k"), "add --sink nft"),
        (("--sut", "l3fwd", "--testpmd-fwd", "mac"), "--testpmd-fwd with --sut l3fwd"),
        (("--sut", "router", "--ovs-rules", "10"), "--ovs-rules with --sut router"),
        (("--sut", "ovs", "--sut-drop", "0.01"), "--sut-drop with --sut ovs"),
    ],
)
def test_what_a_data_plane_cannot_take_is_refused_before_anything_is_built(
    cli, args, needle, tmp_path, monkeypatch
):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    res = cli("testbed", "up", "--name", "dpcli", *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert needle in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


@pytest.mark.slow
def test_a_sweeps_plan_shows_the_data_planes_knobs_with_their_defaults(cli, tmp_path):
    res = cli("sweep", "--sut", "ovs", "--ovs-rules", "1000", "--rates", "10k", "--dry-run",
              "--db", str(tmp_path / "s.db"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[0]
    assert "sut=ovs" in head and "ovs_port=afxdp" in head and "ovs_flows=normal" in head
    assert "ovs_rules=1000" in head and "testpmd_fwd" not in head
    res = cli("sweep", "--sut", "testpmd", "--rates", "10k", "--dry-run",
              "--db", str(tmp_path / "s.db"))  # fmt: skip
    assert "testpmd_fwd=io" in res.stdout and "dpdk_vdev=af_xdp" in res.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dataplanes.toml", "dataplanes-mrr.toml"])
def test_the_data_planes_campaigns_plan_each_sut_with_1_and_100k_flows(cli, name):
    res = cli("campaign", "plan", str(ROOT / "examples" / name))
    assert res.returncode == 0, res.stderr
    assert "cells: 10 (full factorial)" in res.stdout
    for sut in ("router", "xdp-router", "ovs", "testpmd", "l3fwd"):
        for flows in (1, 100000):
            assert f"sut={sut} flows={flows} " in res.stdout or res.stdout.count(
                f"sut={sut} flows={flows}\n"
            ), (sut, flows)


@pytest.mark.slow
def test_a_config_file_takes_the_data_planes_keys(cli, tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text('[testbed]\nsut = "ovs"\novs_port = "system"\novs_flows = "ports"\n')
    res = cli("--config", str(conf), "config", "show")
    assert res.returncode == 0, res.stderr
    assert 'ovs_port = "system"' in res.stdout and 'ovs_flows = "ports"' in res.stdout
    conf.write_text('[testbed]\novs_port = "dpdk"\n')
    res = cli("--config", str(conf), "config", "show")
    assert res.returncode == 3 and "ovs_port" in res.stderr, res.stderr


def _path_without(tmp_path: Path, *programs: str) -> str:
    """A PATH holding every program of this host's PATH but ``programs``: as on a host
    where their package is not installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for p in Path(d).iterdir():
            link = bin_dir / p.name
            if p.name not in programs and not link.exists() and os.access(p, os.X_OK):
                link.symlink_to(p)
    return str(bin_dir)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sut", "programs", "line"),
    [
        ("ovs", ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl",
                 "ovs-appctl"),
         "netassay: Open vSwitch (ovsdb-tool) is not installed: no ovsdb-tool on PATH; "
         "install Debian's openvswitch-switch (apt-get install openvswitch-switch) or run "
         "'make setup'"),
        ("testpmd", ("dpdk-testpmd",),
         "netassay: DPDK's testpmd is not installed: no dpdk-testpmd on PATH; install "
         "Debian's dpdk-dev (apt-get install dpdk-dev) or run 'make setup'"),
    ],
)  # fmt: skip
def test_a_data_plane_whose_package_is_missing_is_refused_in_one_line_naming_it(
    cli, tmp_path, sut, programs, line
):
    """Its programs absent from PATH (as without the Debian package): testbed up and a
    sweep refuse in one line, exit 8 (a tool is missing), what to install, before
    anything is built."""
    env = {"PATH": _path_without(tmp_path, *programs), "NETASSAY_RUN_DIR": str(tmp_path / "run")}
    db = tmp_path / "s.db"
    up = ("testbed", "up", "--name", "dpmiss", "--sut", sut)
    sweep = ("sweep", "--sut", sut, "--rates", "10k", "--db", str(db))
    for args in (up, sweep):
        res = cli(*args, env_extra=env)
        assert res.returncode == 8, (args, res.returncode, res.stderr)
        assert res.stderr.strip() == line, res.stderr
        assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    assert not db.exists()
