"""Core commands (placeholder list; each module below adds to ``eros.cli.main``)."""

from __future__ import annotations

import click

from eros.cli import main
from eros.settings import load_settings


@main.command()
@click.option("--sql", is_flag=True, help="Print the SQL instead of running it.")
def migrate(sql: bool) -> None:
    """Upgrade the database schema to the latest version (alembic upgrade head)."""
    from eros.migrations import upgrade

    settings = load_settings()
    upgrade(settings.require_database_url(), sql=sql)
