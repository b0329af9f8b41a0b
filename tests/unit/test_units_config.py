import pytest

from netassay.config import load_config, to_toml
from netassay.errors import InputError, UsageError
from netassay.units import fmt_rate, parse_duration, parse_rate, parse_rates


def test_rates_and_units():
    assert parse_rate("10k") == 1e4 and parse_rate("1.5M") == 1.5e6 and parse_rate("10G") == 1e10
    assert parse_rates("50k:200k:50k") == [5e4, 1e5, 1.5e5, 2e5]
    assert parse_rates("1k,2k") == [1e3, 2e3]
    assert parse_duration("2s") == 2 and parse_duration("500ms") == 0.5
    assert fmt_rate(1.25e6) == "1.25 Mpps"


@pytest.mark.parametrize(
    "bad", ["", "abc", "10x", "-5k", "0", "50k:10k:5k", "1:2", "2k,1k", "2e12", "9" * 306]
)
def test_bad_rates_are_one_line_usage_errors(bad):
    with pytest.raises(UsageError) as e:
        parse_rates(bad)
    assert "\n" not in e.value.line()


@pytest.mark.parametrize("bad", ["0", "-1s", "two", "5 parsecs", "100000001", "9" * 400 + "h"])
def test_bad_durations(bad):
    with pytest.raises(UsageError):
        parse_duration(bad)


def test_config_layers_and_unknown_keys(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[analysis]\neta = 0.2\nmode = "published"\n')
    cfg = load_config(f, {"analysis": {"eta": 0.05, "pdr": None}})
    assert cfg.analysis.eta == 0.05 and cfg.analysis.mode == "published"
    assert cfg.analysis.pdr == 0.005
    assert "eta = 0.05" in to_toml(cfg)
    f.write_text("[analysis]\nzeta = 1\n")
    with pytest.raises(InputError, match="unknown key 'zeta'"):
        load_config(f)
    f.write_text("[analyss]\n")
    with pytest.raises(InputError, match="unknown section"):
        load_config(f)
    f.write_text('[analysis]\neta = "high"\n')
    with pytest.raises(InputError, match="expected a float"):
        load_config(f)
    with pytest.raises(UsageError):
        load_config(None, {"analysis": {"mode": "guess"}})


def test_the_default_frame_is_the_smallest_of_the_ip_version():
    from netassay.config import TestbedConfig, load_config, with_frame_size

    assert TestbedConfig().resolved().size_bytes == 64
    assert TestbedConfig(ip_version=6).resolved().size_bytes == 84
    assert TestbedConfig(ip_version=6, size_bytes=128).resolved().size_bytes == 128
    assert with_frame_size(TestbedConfig(ip_version=6)).size_bytes == 84
    cfg = load_config(None, overrides={"testbed": {"ip_version": 6}})
    assert cfg.testbed.size_bytes == 84


def test_config_keys_are_the_flags_keys_with_units_and_lines(tmp_path):
    import warnings

    from netassay.config import ConfigWarning

    f = tmp_path / "c.toml"
    f.write_text('[testbed]\nip = 6\nsut_cap = "100k"\nsize = 128\n[sweep]\nduration = "1s"\n')
    cfg = load_config(f)
    assert (cfg.testbed.ip_version, cfg.testbed.sut_cap_pps, cfg.testbed.size_bytes) == (
        6, 100_000.0, 128,
    )  # fmt: skip
    assert cfg.section("sweep") == {"duration": "1s"}  # the CLI checks it with the method
    f.write_text("[testbed]\nflows = 2\n\nsize = 20\n")
    with pytest.raises(InputError, match=r"c\.toml:4: \[testbed\] size = 20"):
        load_config(f)
    f.write_text("[testbed]\nsizes = 64\n")
    with pytest.raises(InputError, match=r"c\.toml:2: unknown key 'sizes' in \[testbed\]"):
        load_config(f)
    f.write_text("[testbed]\nsize_bytes = 128\n")  # an older file's name: read, and said
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert load_config(f).testbed.size_bytes == 128
    assert [str(w.message) for w in seen if w.category is ConfigWarning] == [
        f"{f}:2: 'size_bytes' is now 'size' (the flag's and a campaign file's name); read as such"
    ]


def test_config_show_reads_back_as_the_same_config(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[testbed]\nsut = "xdp-router"\nsut_cap = "90k"\n[analysis]\neta = 0.2\n')
    cfg = load_config(f, resolve=False)
    g = tmp_path / "shown.toml"
    g.write_text(to_toml(cfg))
    again = load_config(g, resolve=False)
    assert again.testbed == cfg.testbed and again.analysis == cfg.analysis
