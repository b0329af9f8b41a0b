"""The CLI's entry point tells parser errors from its own and from bugs, whichever click
(typer's own copy or click proper) raised them."""

from __future__ import annotations

import pytest
import typer

from netassay import cli
from netassay.errors import UsageError


def test_typer_vendored_click_errors_are_recognised():
    # typer exposes its click's BadParameter publicly; the rest of that family shares it
    exc = typer.BadParameter("nope")
    assert exc.exit_code == 2
    assert cli.is_click_error(exc)


def test_click_proper_errors_are_recognised():
    click = pytest.importorskip("click")
    for exc in (click.UsageError("nope"), click.BadParameter("x"), click.NoSuchOption("--x")):
        assert cli.is_click_error(exc)
        assert exc.exit_code == 2


@pytest.mark.parametrize(
    "exc", [ValueError("x"), KeyError("k"), UsageError("bad flag"), typer.Exit(3), typer.Abort()]
)
def test_other_errors_are_not_parser_errors(exc):
    assert not cli.is_click_error(exc)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["serch"], "No such command"),
        (["assess", "--bogus-flag", "x"], "unknown flag --bogus-flag"),
        (["assess"], "Missing argument"),
        (["sweep", "--runs", "abc", "--dry-run"], "Invalid value"),
        (["sweep", "--runs"], "requires an argument"),
    ],
)
def test_main_exits_2_with_clicks_message(argv, needle, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "internal error" not in err
