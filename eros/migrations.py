"""Running the alembic migrations from code (``eros migrate``, ``eros run``, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

_HERE = Path(__file__).resolve().parent


def _script_location() -> Path:
    """The alembic/ folder beside the package (a source checkout or an editable install)."""
    candidate = _HERE.parent / "alembic"
    if not (candidate / "env.py").exists():
        raise FileNotFoundError(f"alembic scripts not found at {candidate}")
    return candidate


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_script_location()))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, *, sql: bool = False, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision, sql=sql)
