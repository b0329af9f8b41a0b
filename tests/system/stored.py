"""What the system tests read back: a command's first JSON line, the trials of a store's
one experiment, and whether a trial lost frames only to the host."""

from __future__ import annotations

import json

from netassay import quality
from netassay.store.db import Store


def json_of(cli, *args, timeout: float = 300):
    """The command's first line of JSON; the command must have exited 0."""
    res = cli(*args, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[0])


def trials_of(db) -> list[dict]:
    """The trials of the first experiment in ``db``."""
    with Store(db, readonly=True) as st:
        return st.trials(next(iter(st.experiments())).id)


def lost_only_to_the_host(rec) -> None:
    """Nothing was lost, or only at the SUT's ingress queue in a trial the host is
    warned of: the generator stalled (its catch-up burst into the queue), or a thread
    of the host held the SUT's CPU while the queue overflowed (a CI run: 4,828 of
    200,000 at the ingress, none in forwarding). Either is a measurement fault the
    trial says, not the SUT's: a route missing, a frame miscounted would show elsewhere
    or without the warning."""
    lost = rec.sent - rec.received
    if lost == 0:
        return
    warned = any(w.startswith((quality.GENERATOR_STALL, quality.HOST_NOISE)) for w in rec.warnings)
    assert warned and rec.loss_location["sut_ingress"] == lost, (rec.loss_location, rec.warnings)
