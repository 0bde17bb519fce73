"""Running the alembic migrations from code (``eros migrate``, ``eros run``, tests).

The scripts live inside the package (``eros/db/migrations``), so a wheel install migrates
with no checkout; the checkout's top-level ``alembic/`` is a link to the same folder, for
``alembic upgrade head`` (the Procfile's ``release``).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

#: the alembic scripts: env.py, script.py.mako and versions/.
SCRIPT_LOCATION = Path(__file__).resolve().parent / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, *, sql: bool = False, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision, sql=sql)
