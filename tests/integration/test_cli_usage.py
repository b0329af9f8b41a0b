"""Every usage error the parser finds exits 2 with click's own message, never 70.

Each kind runs the real CLI in a child process (typer parses with its own copy of
click, whose exceptions are not click's: a handler that only knew click's missed them).
"""

from __future__ import annotations

import pytest


def _usage_error(res, needle: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "internal error" not in res.stderr
    assert "Traceback" not in res.stderr
    assert "Error: " in res.stderr and needle in res.stderr, res.stderr
    assert res.stdout == ""
    return res.stderr


def test_unknown_command(cli):
    err = _usage_error(cli("serch"), "No such command 'serch'")
    assert "Usage: " in err and "--help" in err


def test_unknown_option(cli):
    err = _usage_error(cli("assess", "--bogus-flag", "x"), "No such option: --bogus-flag")
    assert "Usage: " in err and "assess" in err


def test_missing_argument(cli):
    _usage_error(cli("assess"), "Missing argument")


def test_bad_argument_value(cli):
    _usage_error(cli("sweep", "--runs", "abc", "--dry-run"), "Invalid value for '--runs'")


def test_missing_option_value(cli):
    _usage_error(cli("sweep", "--runs"), "Option '--runs' requires an argument")


@pytest.mark.parametrize("args", [(), ("testbed",), ("db",)])
def test_no_arguments_print_help_and_exit_2(cli, args):
    res = cli(*args)
    assert res.returncode == 2, res.stderr
    assert "internal error" not in res.stderr
    assert "Usage" in res.stdout + res.stderr


def test_help_and_version_still_exit_0(cli):
    assert cli("--help").returncode == 0
    assert cli("sweep", "--help").returncode == 0
    assert cli("--version").returncode == 0


def test_config_show_in_a_child_process_prints_auto(cli):
    res = cli("config", "show", timeout=60)
    assert res.returncode == 0, res.stderr
    assert 'pinning = "auto"' in res.stdout
