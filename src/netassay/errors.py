"""One error hierarchy for everything a user can see.

Every user-facing error renders as one line: what failed, why, and what to do.
Each family has its own non-zero exit code, so scripts can tell them apart.
"""

from __future__ import annotations


class NetassayError(Exception):
    """Base of every error netassay reports to a user."""

    exit_code = 1

    def __init__(self, what: str, why: str = "", todo: str = "") -> None:
        self.what = what
        self.why = why
        self.todo = todo
        super().__init__(self.line())

    def line(self) -> str:
        parts = [self.what]
        if self.why:
            parts.append(self.why)
        text = ": ".join(parts)
        if self.todo:
            text += f"; {self.todo}"
        return " ".join(text.split())


class UsageError(NetassayError):
    """A flag or argument is malformed or out of range."""

    exit_code = 2


class InputError(NetassayError):
    """An input file (results, config) cannot be read or is malformed."""

    exit_code = 3


class StoreError(NetassayError):
    """The SQLite store is missing, corrupted, locked or of an unknown schema."""

    exit_code = 4
    # where a write failed: the store, and the experiment a run was storing with its
    # kind (the command line names that method's --resume for it); None: not known
    path: str | None = None
    experiment: int | None = None
    kind: str | None = None


class StoreDamaged(StoreError):
    """SQLite found the store's file damaged (malformed, or not a database at all): the
    one store error whose advice is 'netassay db check' and a copy."""


class StoreFull(StoreError):
    """No space left on the device holding the store. What it held is intact (the write
    in progress was undone as a whole); the same command, run again with space, goes on."""


class StoreLocked(StoreError):
    """Another process holds the store's write lock and does not let go (``pid``: which,
    when it can be known)."""

    pid: int | None = None


class AlreadyStored(StoreError):
    """An experiment's key is stored already: another netassay stored it after this one
    looked. An import skips it; anything else that meets it says so (nothing written)."""

    def __init__(self, path: str, key: str, experiment_id: int) -> None:
        self.key = key
        self.experiment_id = experiment_id
        super().__init__(
            f"{path}: experiment {experiment_id} is stored under the same key already",
            f"another netassay stored '{key}' meanwhile; nothing of this one was written",
            "run the same command again (it skips what is stored)",
        )


class TestbedError(NetassayError):
    """The testbed could not be built, locked or torn down."""

    __test__ = False  # not a pytest test class
    exit_code = 5


class PrivilegeError(NetassayError):
    """The operation needs root (network namespaces, sysctls)."""

    exit_code = 6


class GeneratorError(NetassayError):
    """The traffic generator failed or could not keep the requested rate."""

    exit_code = 7


class ToolError(NetassayError):
    """An external tool (ip, tc, nft, iperf3) failed or is missing."""

    exit_code = 8


class VerdictRefused(NetassayError):
    """A verdict the command's ``--fail-on`` names (FAIL or BAD, or INCONCLUSIVE): the
    measurement itself ran and is stored; the gate a script asked for did not pass."""

    exit_code = 11


class RegressionFound(NetassayError):
    """``trend --fail-on-regression``: a series' newest group is a regression beyond the
    threshold; the trend was shown, the gate a script asked for did not pass."""

    exit_code = 1


class Interrupted(NetassayError):
    """The run was stopped by a signal; what was stored is kept."""

    exit_code = 130


def stored_what(n: int, unit: str, db: object) -> str:
    """What an interrupted run kept (an ``Interrupted``'s why): the ``unit``s that ended,
    in ``db``, or nothing."""
    if not db:
        return f"{n} {unit}(s) had ended; nothing is stored without --db"
    if n == 0:
        return f"no {unit} had ended: nothing was stored (and no empty {db} is left)"
    return f"the {n} {unit}(s) that ended are stored in {db}"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt: a run ends the same way
    (what ended is stored, the testbed removed), and netassay exits 143 (128 + 15)."""


class StoreWaiting(UserWarning):
    """A writer waits for the store's write lock another process holds: said once, on
    stderr, when the wait is longer than a few seconds."""


class Deprecated(UserWarning):
    """An old spelling (a flag, a file's key) that still works for one release: one line
    on stderr naming the new one; the command goes on as the new spelling would."""


class StoreWarning(UserWarning):
    """A store can be read but is damaged: what is read from it may be wrong. The CLI
    shows it as one line on stderr; the command goes on (a write is refused instead)."""
