"""The inputs the fuzzers (tests/fuzzing.py, bench/fuzz.py) found breaking a parser, each
kept as it was found: refused in one line of the right class, or read right."""

import pytest

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
