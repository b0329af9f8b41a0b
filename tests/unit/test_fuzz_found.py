"""The inputs the fuzzers (tests/fuzzing.py, bench/fuzz.py) found breaking a parser, each
kept as it was found: refused in one line of the right class, or read right."""

import pytest

from netassay.errors import UsageError
from netassay.units import parse_duration, parse_pause


@pytest.mark.parametrize("text", ["9" * 400, "\xa0" + "5" * 320 + "s", "1" * 309 + "h"])
def test_a_duration_beyond_a_float_is_refused(text):
    # found by the 'duration' and 'pause' targets: read as inf seconds and accepted
    for parse in (parse_duration, parse_pause):
        with pytest.raises(UsageError, match="not a finite number"):
            parse(text)
