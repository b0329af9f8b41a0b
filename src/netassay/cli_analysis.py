"""CLI commands of the analysis core: import, assess, report, db check."""

from __future__ import annotations

import typer


def register(app: typer.Typer, db_app: typer.Typer) -> None:
    """Add the analysis commands to the CLI."""
