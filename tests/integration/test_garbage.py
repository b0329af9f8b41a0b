"""Random garbage never produces a traceback: one line and exit 3, or a clean assessment."""

import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netassay.cli import main

_json_ish = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=4),
    max_leaves=12,
)
_line = st.one_of(
    st.text(max_size=60),
    _json_ish.map(lambda v: json.dumps(v)),
    st.lists(st.lists(st.integers(-5, 10**7), min_size=1, max_size=4), min_size=1, max_size=5).map(
        json.dumps
    ),
)


def _run(argv):
    err, out = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code or 0
    return code, err.getvalue()


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, max_size=6), raw=st.binary(max_size=64), as_bytes=st.booleans())
def test_random_garbage_never_raises(lines, raw, as_bytes):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "garbage_raw_3.txt"
        if as_bytes:
            f.write_bytes(raw)
        else:
            f.write_text("\n".join(lines))
        code, err = _run(["assess", str(f)])
        assert "Traceback" not in err
        assert code in (0, 2, 3, 4), err  # 4: it looked like an SQLite file
        if code:
            assert len(err.strip().splitlines()) == 1 and err.startswith("netassay: ")
            assert str(f) in err or "nothing to assess" in err or "store" in err
