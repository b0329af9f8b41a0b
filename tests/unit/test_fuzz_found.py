"""The inputs the fuzzers (tests/fuzzing.py, bench/fuzz.py) found breaking a parser, each
kept as it was found: refused in one line of the right class, or read right."""

import pytest

from netassay.config import load_config, to_toml
from netassay.errors import InputError, UsageError
from netassay.imix import parse_imix
from netassay.methods.rtt import ping_import
from netassay.methods.sizes import parse_sizes
from netassay.units import parse_duration, parse_pause


@pytest.mark.parametrize("text", ["9" * 400, "\xa0" + "5" * 320 + "s", "1" * 309 + "h"])
def test_a_duration_beyond_a_float_is_refused(text):
    # found by the 'duration' and 'pause' targets: read as inf seconds and accepted
    for parse in (parse_duration, parse_pause):
        with pytest.raises(UsageError, match="not a finite number"):
            parse(text)


@pytest.mark.parametrize("text", ["²", "64,²", "٣", "６４"])
def test_sizes_in_other_digits_are_refused(text):
    # found by the 'sizes' target: '²' passed str.isdigit and int() raised ValueError
    with pytest.raises(UsageError, match="is not a frame size"):
        parse_sizes(text, 4)


@pytest.mark.parametrize("text", ["²:1", "64:²", "٣:1", "６４:7"])
def test_an_imix_in_other_digits_is_refused(text):
    # '64:²' (found with the sizes target's input): int() raised ValueError
    with pytest.raises(UsageError, match="SIZE:WEIGHT"):
        parse_imix(text, 4)


@pytest.mark.parametrize(
    "time, why",
    [("1.2.3", "not iputils ping output"), ("..", "not iputils ping output"),
     ("9" * 400, "beyond any ping's time"), ("99999999999", "beyond any ping's time")],
)  # fmt: skip
def test_a_ping_reply_time_that_is_no_time_is_refused_naming_its_line(time, why):
    # found by the 'ping' target: time=.. raised ValueError, time=9...9 OverflowError
    text = (
        "PING h (198.18.0.2) 56(84) bytes of data.\n"
        f"64 bytes from h: icmp_seq=1 ttl=64 time={time} ms\n"
    )
    with pytest.raises(InputError, match=f"ping.txt:2: .*{why}"):
        ping_import.parse(text, "ping.txt")


@pytest.mark.parametrize(
    "text",
    ['[cluster]\ntls_dir = "a\\"b"\n', '[sweep]\nlabel = "x\\\\y\\u007f"\n',
     '[search]\nlabel = []\n', '[rtt]\n"two words" = 1\n', '[sweep]\nx = {a = 1}\n',
     "[accept]\nwhen = 2024-01-02T03:04:05Z\n"],
)  # fmt: skip
def test_config_show_prints_a_file_that_reads_back_the_same(tmp_path, text):
    # found by the 'config_toml' target: a quote in a string, a quoted key, an inline
    # table or a date printed as no TOML; a file's [] printed as unset
    (tmp_path / "a.toml").write_text(text)
    cfg = load_config(tmp_path / "a.toml", resolve=False)
    shown = to_toml(cfg)
    (tmp_path / "b.toml").write_text(shown)
    again = load_config(tmp_path / "b.toml", resolve=False)
    assert to_toml(again) == shown
    assert again.methods == cfg.methods and again.cluster == cfg.cluster


@pytest.mark.parametrize(
    "key, value", [("pdr", "0.0"), ("eta", "1.5"), ("entry_factor", "0.97"), ("mode", '"x"')]
)
def test_a_config_files_analysis_value_out_of_range_names_its_line(tmp_path, key, value):
    # found by the 'config_toml' target: '[analysis] pdr = 0.0' was a UsageError (exit 2)
    # naming no file, where every other bad value of a config file names its line
    f = tmp_path / "a.toml"
    f.write_text(f"[testbed]\nsize = 128\n\n[analysis]\n{key} = {value}\n")
    with pytest.raises(InputError, match=rf"a.toml:5: \[analysis\] {key} = "):
        load_config(f)
