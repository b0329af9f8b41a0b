"""Figure jobs: keyed by their data, kept when unchanged, drawn by a pool of processes."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

from netassay.shared import render
from netassay.shared.render import FigureJob


def write_pid(text: str, stem: Path) -> None:
    """A drawing function: the text and the process that drew it."""
    stem.with_name(stem.name + ".txt").write_text(f"{text} {os.getpid()}")


def jobs(folder: Path, texts: list[str]) -> list[FigureJob]:
    return [FigureJob(write_pid, (t,), folder / f"f{i}", t, (".txt",)) for i, t in enumerate(texts)]


def test_drawn_in_processes_then_kept_until_the_data_changes(tmp_path):
    texts = [f"curve {i}" for i in range(6)]
    said = io.StringIO()
    assert render.render(jobs(tmp_path, texts), processes=2, progress=said) == 6
    pids = {(tmp_path / f"f{i}.txt").read_text().split()[-1] for i in range(6)}
    assert str(os.getpid()) not in pids and 1 <= len(pids) <= 2
    assert said.getvalue().splitlines()[-1] == "figures 6/6 (0 kept)"
    said = io.StringIO()
    assert render.render(jobs(tmp_path, texts), processes=2, progress=said) == 0
    assert said.getvalue() == "figures 6/6 (6 kept)\n"
    texts[3] = "curve 3, one frame more"
    assert render.render(jobs(tmp_path, texts), processes=1) == 1
    assert (tmp_path / "f3.txt").read_text().startswith("curve 3, one frame more")


def test_the_key_holds_the_function_the_style_and_the_version(tmp_path, monkeypatch):
    job = jobs(tmp_path, ["a"])[0]
    key = job.key()
    assert FigureJob(jobs, job.args, job.stem, "a", job.suffixes).key() != key
    monkeypatch.setattr(render, "STYLE", render.STYLE + 1)
    assert job.key() != key
    monkeypatch.setattr(render, "__version__", "0.0.0-other")
    assert job.key() != key


def test_a_missing_file_is_drawn_again(tmp_path):
    js = jobs(tmp_path, ["a", "b"])
    render.render(js, processes=1)
    (tmp_path / "f1.txt").unlink()
    assert [j.fresh() for j in js] == [True, False]
    assert render.render(js, processes=1) == 1


_SEEN = Path("/tmp")  # set by the test: where each worker says what it found


def _say_sigterm() -> None:
    import signal

    seen = "default" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handler"
    (_SEEN / str(os.getpid())).write_text(seen)


def test_the_pools_workers_are_forked_with_sigterms_default_action(tmp_path):
    """What a worker finds when it first runs is what it was forked with: a worker that
    hangs before that point ends on SIGTERM only with the default action."""
    import signal

    global _SEEN
    from netassay.shared.render import forked_pool

    _SEEN = tmp_path
    before = signal.signal(signal.SIGTERM, lambda *_: None)  # a handler, as the CLI has
    try:
        with forked_pool(2, _say_sigterm) as pool:
            pool.map(abs, range(4))
            # one worker can take every task while the other is still starting, and
            # leaving the block terminates the pool: wait for both to have said
            deadline = time.monotonic() + 30
            while len([f for f in tmp_path.iterdir() if f.read_text()]) < 2:
                assert time.monotonic() < deadline, list(tmp_path.iterdir())
                time.sleep(0.01)
        seen = [f.read_text() for f in tmp_path.iterdir()]
        assert seen == ["default", "default"], seen
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # restored here
    finally:
        signal.signal(signal.SIGTERM, before)
