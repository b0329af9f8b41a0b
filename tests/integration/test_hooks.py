"""The commands a user names (trial.hooks), run for real in netassay's own namespace: the
trial's environment reaches them, their output is kept, a failure is a fault naming the
command and its last line, a command that cannot start or outlasts its timeout too."""

from __future__ import annotations

from netassay.quality import COMMAND_FAULT, exclusion
from netassay.trial.hooks import Hooks, run_command, trial_env


def test_a_hook_is_told_its_trial_and_kept():
    hooks = Hooks(before="sh -c 'echo $NETASSAY_HOOK $NETASSAY_TRIAL $NETASSAY_LOAD_PPS'")
    out, fault = hooks.run("before", trial_env(2, 1, 15_000.0, 0.5, 7))
    assert fault is None and out is not None
    assert out["stdout"] == "before 2.1 15000\n" and out["exit"] == 0 and out["seconds"] >= 0
    assert hooks.run("after", {}) == (None, None)  # none given: nothing runs


def test_the_testbeds_variables_reach_a_hook_and_the_trials_win():
    """What the testbed adds (a data plane's variables) is in the hook's environment; a
    trial's own variable of the same name is the trial's."""
    hooks = Hooks(after="sh -c 'echo $OVS_RUNDIR $NETASSAY_SENT'",
                  env={"OVS_RUNDIR": "/run/x.dp/ovs", "NETASSAY_SENT": "stale"})  # fmt: skip
    out, fault = hooks.run("after", {"sent": 10})
    assert fault is None and out is not None and out["stdout"] == "/run/x.dp/ovs 10\n"


def test_a_failing_hook_is_a_fault_with_its_last_line():
    hooks = Hooks(after="sh -c 'echo working; echo no such counter >&2; exit 4'")
    out, fault = hooks.run("after", {"sent": 10})
    assert out is not None and out["exit"] == 4
    assert fault == (
        f"{COMMAND_FAULT}: --hook-after 'sh -c 'echo working; echo no such counter >&2; "
        "exit 4'' exited 4: no such counter"
    )
    assert exclusion([fault]) == fault  # a measurement fault: the trial is left out


def test_a_command_that_cannot_start_or_hangs_is_a_fault():
    out, fault = Hooks(before="no-such-program-here").run("before", {})
    assert out is not None and out["exit"] is None and "cannot run no-such-program-here" in fault
    slow = run_command("sleep 5", None, {}, timeout_s=0.3)
    assert slow["exit"] is None and "timed out" in slow["error"] and slow["seconds"] < 2
