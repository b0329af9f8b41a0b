"""Who holds a store's write lock, in the words of the waiting writer's line
(``store.faults.holder_kind``): netassay's own commands by their command line, never
by a path that happens to hold the word."""

from __future__ import annotations

from netassay.store.faults import holder_kind


def test_netassay_is_known_by_its_command_not_by_a_path():
    assert holder_kind("netassay import pastrami /data --db lab.db") == "another netassay"
    assert holder_kind("") == "another netassay"  # nothing known: netassay's lock, likely
    # a checkout in a folder named netassay runs other programs too
    cmd = "/home/me/netassay/.venv/bin/python3 -c import sqlite3 ..."
    assert holder_kind(cmd) == "another process"
    assert holder_kind("sqlite3 lab.db") == "another process"
