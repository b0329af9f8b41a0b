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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt: a run ends the same way
    (what ended is stored, the testbed removed), and netassay exits 143 (128 + 15)."""


class StoreWarning(UserWarning):
    """A store can be read but is damaged: what is read from it may be wrong. The CLI
    shows it as one line on stderr; the command goes on (a write is refused instead)."""
