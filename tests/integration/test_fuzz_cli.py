"""The real CLI (in-process, as a user's shell runs it) on fuzzed inputs: every importer,
the config and campaign files, the load flags. A refused input exits with its class
(3 for a file, 2 for a flag) and one line, never a traceback nor an internal error
(exit 70), and leaves the store exactly as it was: the same bytes, or still no file
when there was none. The inputs are tests/fuzzing.py's; a few per command (each run
costs about 0.3 s), bench/fuzz.py runs their parsers for 100,000 inputs each."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.fuzzing import TARGETS, tree

from netassay.cli import main
from netassay.traffic import generator as gen

FEW = settings(
    max_examples=20, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
GOOD_PASTRAMI = b"[[100000, 0], [1000000, 1000000, 0], [1000000, 999000, 1000]]\n"


def run(argv: list[str]) -> tuple[int, str, str]:
    err, out = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def state(folder: Path) -> dict[str, str]:
    """The store's files (the database, a WAL beside it) by name, as digests."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("s.db*")}


@pytest.fixture(scope="module")
def seeded() -> Any:
    """A store holding one imported experiment, copied for each example."""
    with tempfile.TemporaryDirectory(prefix="na-fuzz-") as d:
        src = Path(d) / "good_raw_2_exp_t_1.txt"
        src.write_bytes(GOOD_PASTRAMI)
        code, _, err = run(["import", "pastrami", str(src), "--db", str(Path(d) / "s.db")])
        assert code == 0, err
        yield Path(d) / "s.db"


def judged(argv: list[str], folder: Path, refused_code: int) -> int:
    """Run ``argv`` with the store in ``folder`` and check the CLI's properties."""
    before = state(folder)
    code, _, err = run(argv)
    assert "Traceback" not in err and code != 70, err
    if code != 0:  # one line, after any warning (a config file's renamed key)
        assert code == refused_code, (code, err)
        said = [x for x in err.strip().splitlines() if not x.startswith("netassay: warning: ")]
        assert len(said) == 1 and said[0].startswith("netassay: "), err
        assert state(folder) == before, "a refused input changed the store"
    return code


def _import(seeded: Path, existing: bool, write: Any, *command: str) -> int:
    with tempfile.TemporaryDirectory(prefix="na-fuzz-") as d:
        folder = Path(d)
        if existing:
            shutil.copy(seeded, folder / "s.db")
        inputs = write(folder)
        return judged(["import", *command, *inputs, "--db", str(folder / "s.db")], folder, 3)


@FEW
@given(x=TARGETS["pastrami"].strategy(), existing=...)
def test_import_pastrami(seeded, x, existing: bool):
    def write(folder: Path) -> list[str]:
        (folder / "in").mkdir()
        f = folder / "in" / x[0]
        f.write_bytes(x[1])
        return [str(f)]

    _import(seeded, existing, write, "pastrami")


@FEW
@given(text=TARGETS["iperf3"].strategy(), existing=...)
def test_import_iperf3(seeded, text: str, existing: bool):
    def write(folder: Path) -> list[str]:
        f = folder / "iperf3.json"
        f.write_bytes(text.encode("utf-8", "surrogatepass"))
        return [str(f)]

    _import(seeded, existing, write, "iperf3")


@FEW
@given(files=TARGETS["monipe"].strategy(), existing=...)
def test_import_monipe(seeded, files: dict[str, str | bytes], existing: bool):
    with tree(files) as results:

        def write(folder: Path) -> list[str]:
            return [str(results)]

        _import(seeded, existing, write, "monipe")


@FEW
@given(text=TARGETS["ping"].strategy(), existing=...)
def test_import_ping(seeded, text: str, existing: bool):
    def write(folder: Path) -> list[str]:
        f = folder / "ping.txt"
        f.write_bytes(text.encode("utf-8", "surrogatepass"))
        return [str(f)]

    _import(seeded, existing, write, "ping")


@FEW
@given(text=TARGETS["config_toml"].strategy())
def test_config_show(text: str):
    with tempfile.TemporaryDirectory(prefix="na-fuzz-") as d:
        f = Path(d) / "netassay.toml"
        f.write_bytes(text.encode("utf-8", "surrogatepass"))
        if judged(["--config", str(f), "config", "show"], Path(d), 3) == 0:
            shown = run(["--config", str(f), "config", "show"])[1]
            f.write_text(shown)
            code, again, err = run(["--config", str(f), "config", "show"])
            assert code == 0 and again == shown, err


@FEW
@given(text=TARGETS["campaign_toml"].strategy())
# an old key's deprecation said first, then the file's problems: each line starts with
# the file's place, as every other line of a file's problems does
@example(text='[campaign]\nmethod = "rtt"\n\n[factors]\nrate = []\n')
# a value with a carriage return, which a parser's refusal quotes: still one line
@example(text='[[cells]]\ninterval = false\nimix = "0\\r0"\n')
def test_campaign_plan(text: str):
    with tempfile.TemporaryDirectory(prefix="na-fuzz-") as d:
        f = Path(d) / "c.toml"
        f.write_bytes(text.encode("utf-8", "surrogatepass"))
        code, _, err = run(["campaign", "plan", str(f), "--json"])
        assert "Traceback" not in err and code != 70, err
        if code:  # one line per problem, each naming the file
            assert code == 3, err
            lines = err.strip().splitlines()
            assert lines[0].startswith(f"netassay: {f}") and all(str(f) in x for x in lines), err


@pytest.mark.slow
@FEW
@given(
    rates=TARGETS["rates"].strategy(),
    duration=TARGETS["duration"].strategy(),
    imix=TARGETS["imix"].strategy(),
)
def test_sweep_load_flags(rates: str, duration: str, imix: tuple[str, int]):
    with tempfile.TemporaryDirectory(prefix="na-fuzz-") as d:
        db = str(Path(d) / "s.db")
        for argv in (
            ["sweep", "--dry-run", "--db", db, "--rates", rates],
            ["sweep", "--dry-run", "--db", db, "--duration", duration],
            ["sweep", "--dry-run", "--db", db, "--imix", imix[0], "--ip", str(imix[1])],
        ):
            if any(a.startswith("-") or "\x00" in a for a in argv[5:6]):
                continue  # a value that reads as a flag: click's own usage error
            judged(argv, Path(d), 2)


_GEN_WORDS = [
    "--dev", "a", "--rate", "1k", "--duration", "1s", "--dst-mac", "02:00:00:00:00:01",
    "--src", "198.18.0.2", "--dst", "198.19.0.2", "--imix", "64:1", "--receive",
    "--xdp-sink", "--size", "1519", "delay", "--a", "--b", "--queue", "0", "+0:a:a:a:a:a",
]  # fmt: skip


@FEW
@given(argv=st.lists(st.one_of(st.sampled_from(_GEN_WORDS), st.text(max_size=6)), max_size=8))
def test_netassay_gen_refuses_a_line_in_one_line(argv: list[str]):
    # the real binary, never sending: no word names an interface of this namespace, so
    # a line that would send, receive or delay is refused before it opens a socket
    real = set(os.listdir("/sys/class/net"))
    argv = [a for a in argv if "\x00" not in a and a not in real]
    cp = subprocess.run(
        [_gen(), *argv], capture_output=True, text=True, timeout=10, check=False
    )  # fmt: skip
    assert "panicked" not in cp.stderr, cp.stderr
    if cp.returncode:  # 2: a usage error or a refusal (no such interface)
        assert cp.returncode == 2, cp.stderr
        lines = cp.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("netassay-gen: "), cp.stderr


def _gen() -> str:
    return gen.find_generator()
