"""What the data-plane method tests read back: a command's first JSON line, and the
trials of a store's one experiment."""

from __future__ import annotations

import json

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
