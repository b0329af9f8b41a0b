"""A campaign cell runs its method in a child process and its failure comes back typed:
the method's own error (its class, exit code and line) when the method refused the
cell, the signal when the child was killed without a word. The coordinator runs in this
process (``run_campaign`` on the in-process LocalCluster, its real worker and children).

Needs root and netassay-gen (skipped with the reason otherwise; CI runs them).
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path

import pytest

from netassay.campaign import order, spec
from netassay.campaign.execute import _progress, run_campaign, summary
from netassay.campaign.worker import CellFailed
from netassay.store.db import Store

pytestmark = pytest.mark.system

# netassay-gen as the sender reads a packet ring, no socket: a socket buffer is refused
# by the method when its test starts (the campaign file's checks take it)
REFUSED = """\
[campaign]
name = "refused"
method = "accept"
seed = 5
[fixed]
contract = "100M"
sender = "netassay-gen"
socket_buffer = "4M"
runs = 1
duration = "1s"
"""

TWO_SWEEPS = """\
[campaign]
name = "killed"
seed = 7
[fixed]
rates = "10k,20k,30k"
runs = 2
duration = "0.5s"
settle = "0s"
peak_check = false
pinning = "unpinned"
[factors]
backlog = [1000, 2000]
"""


def test_a_cell_the_method_refuses_reaches_the_coordinator_as_its_typed_error(
    tb_name, tmp_path, netns_of
):
    c = spec.parse(REFUSED, "refused.toml")
    result = run_campaign(c, str(tmp_path / "r.db"), testbed=tb_name)
    assert result.stored == [] and list(result.failed) == ["campaign-refused-b1-c1"]
    exc = result.errors["campaign-refused-b1-c1"]
    assert isinstance(exc, CellFailed) and exc.error is not None and exc.signal is None
    assert (exc.error.kind, exc.error.exit_code) == ("UsageError", 2)
    assert exc.error.what == "scenario 'rx-/tx-': socket_buffer is an iperf3 setting"
    assert exc.error.todo == "drop socket_buffer from the scenario, or use --sender iperf3"
    assert exc.why == exc.error.line()  # the method's own line, as its command says it
    assert f"on testbed '{tb_name}'" in exc.what
    assert exc.error.line() in summary(result)
    assert netns_of(tb_name) == []  # refused before anything was built


def _cell_children() -> list[int]:
    """The pids of this process's cell children (multiprocessing's spawned ones)."""
    me, out = os.getpid(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me and b"spawn_main" in cmdline:
            out.append(int(pid))
    return out


def test_a_cell_whose_child_is_killed_fails_with_the_signal_and_the_next_cell_runs(
    tb_name, tmp_path, netns_of
):
    c = spec.parse(TWO_SWEEPS, "killed.toml")
    slots = order.run_order(len(c.cells), c.repetitions, 7)
    prog = _progress(c, slots, 1)
    first = slots[0].key(c.name)
    killed: list[int] = []
    lock = threading.Lock()
    shown = prog.trial

    def trial(key: str, n: int) -> None:
        """The first cell's child SIGKILLed once it stored a trial (testbed built)."""
        shown(key, n)
        with lock:
            if key == first and n >= 1 and not killed:
                (pid,) = _cell_children()
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    prog.trial = trial
    db = tmp_path / "k.db"
    result = run_campaign(c, str(db), testbed=tb_name, progress=prog)
    assert killed, "the first cell ended before it stored a trial"
    assert list(result.failed) == [first] and len(result.stored) == 1
    exc = result.errors[first]
    assert isinstance(exc, CellFailed) and exc.error is None
    assert exc.signal == signal.SIGKILL
    assert "its process was killed by SIGKILL" in exc.line()
    # what it stored before it was killed is kept where the line says, never merged
    kept = Path(exc.why.split("kept apart in ")[1].split(" on ")[0])
    try:
        with Store(kept, readonly=True) as st:
            (partial,) = st.experiments()
            assert 1 <= len(st.trials(partial.id)) < 6
    finally:
        shutil.rmtree(kept.parent, ignore_errors=True)
    # the next cell removed the testbed the killed one left, ran and removed its own
    assert netns_of(tb_name) == []
    with Store(db, readonly=True) as st:
        (cell,) = [e for e in st.experiments() if e.metadata.get("role") == "cell"]
        assert cell.key == result.stored[0] and len(st.trials(cell.id)) == 6
