"""Loads in bit/s and as shares in a config file and a campaign file, through the real
command line: the same words as the flags, converted before anything is built; what
cannot be converted is one line naming the file's line (exit 3), as the files' other
errors are."""

from __future__ import annotations

import pytest


def _file(tmp_path, text: str):
    f = tmp_path / "c.toml"
    f.write_text(text)
    return f


@pytest.mark.slow
def test_a_config_files_rates_in_bit_per_second_at_its_layer(cli, tmp_path):
    f = _file(tmp_path, '[testbed]\nsize = 64\n[sweep]\nrates = "2Mbps,4Mbps"\nlayer = "l2"\n')
    res = cli("--config", f, "sweep", "--dry-run", "--runs", "1")
    assert res.returncode == 0, res.stderr
    assert "loads (2): 3.676 kpps, 7.352 kpps" in res.stdout  # 68 bytes a frame at L2
    # the file's layer is its default for loads so written: frames/s flags still work
    res = cli("--config", f, "sweep", "--dry-run", "--runs", "1", "--rates", "100k")
    assert res.returncode == 0, res.stderr
    assert "loads (1): 100 kpps" in res.stdout
    # a flag's layer beside loads in frames/s is refused, as it always was
    res = cli("sweep", "--dry-run", "--rates", "100k", "--layer", "l2")
    assert res.returncode == 2 and "--layer with loads in frames/s" in res.stderr
    f = _file(tmp_path, '[search]\nmax_load = "10%"\nline_rate = "100M"\n')
    res = cli("--config", f, "search", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "max 14.2 kpps" in res.stdout  # 1e7 / (8 * 88)


def test_a_config_files_load_that_cannot_be_names_its_line(cli, tmp_path):
    f = _file(tmp_path, '[sweep]\nruns = 1\nrates = "50%"\n')
    res = cli("--config", f, "sweep", "--dry-run")
    assert res.returncode == 3
    assert res.stderr.startswith(f"netassay: {f}:3: --rates 50%: the line rate is unknown")
    f = _file(tmp_path, '[soak]\nrate = "90%pd"\n')
    res = cli("--config", f, "soak")
    assert res.returncode == 3 and res.stderr.count("\n") == 1
    assert res.stderr.startswith(f"netassay: {f}:2: [soak] rate = '90%pd'")
    f = _file(tmp_path, '[sweep]\nlayer = "l3"\n')
    res = cli("--config", f, "sweep", "--dry-run")
    assert res.returncode == 3
    assert res.stderr.startswith(f"netassay: {f}:2: [sweep] layer = 'l3': a layer is l1 or l2")


def test_a_campaign_plans_each_cells_bit_rate_with_its_frame(cli, tmp_path):
    f = _file(
        tmp_path,
        '[campaign]\nname = "bits"\n[fixed]\nrates = "100Mbps:300Mbps:100Mbps"\nruns = 1\n'
        'duration = "1s"\n[factors]\nsize = [64, 1518]\n',
    )
    res = cli("campaign", "plan", f)
    assert res.returncode == 0, res.stderr
    # 64 bytes take 88 at L1, 1518 take 1542: 1e8 / 704 = 142045, 1e8 / 12336 = 8106
    assert "size=64  [142 kpps..426.1 kpps, 3 loads" in res.stdout
    assert "size=1518  [8.106 kpps..24.32 kpps, 3 loads" in res.stdout
    f.write_text(f.read_text().replace("size = [64, 1518]", 'size = [64, 1518]\nsut_cap = ["1%"]'))
    res = cli("campaign", "plan", f)
    assert res.returncode == 3
    assert f"{f}:9: [factors] sut_cap = '1%'" in res.stderr  # a cap is frames/s only
