"""Running the alembic migrations from code (``eros migrate``, ``eros run``, tests).

The scripts live inside the package (``eros/db/migrations``), so a wheel install migrates
with no checkout; the checkout's top-level ``alembic/`` is a link to the same folder, for
``alembic upgrade head``. The migrations read nothing from the environment: :func:`upgrade`
hands them the settings' EMBEDDING_DIM (``config.attributes["embedding_dim"]``; env.py). After
the migrations it builds or drops the memories' HNSW index as the settings need
(:mod:`eros.db.hnsw_index`): plain ``alembic upgrade head`` does not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, pool

from eros.db import hnsw_index
from eros.settings import Settings, load_settings

#: the alembic scripts: env.py, script.py.mako and versions/.
SCRIPT_LOCATION = Path(__file__).resolve().parent / "migrations"


def alembic_config(url: str, embedding_dim: int | None = None) -> Config:
    """``embedding_dim``: the vector size the migrations create columns with (None: env.py
    takes the process's settings)."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if embedding_dim is not None:
        config.attributes["embedding_dim"] = embedding_dim
    return config


def upgrade(url: str, *, sql: bool = False, revision: str = "head",
            settings: Settings | None = None,
            echo: Callable[[str], None] | None = None) -> str | None:
    """Migrate to ``revision``; at ``head``, then keep the HNSW index in step with
    ``settings`` (this process's by default). Returns what was done to the index (see
    :func:`eros.db.hnsw_index.sync`), None when it was not looked at. With ``sql`` the
    statements are printed, the index's last. The vector columns a migration creates take
    ``settings.embedding_dim``."""
    settings = settings or load_settings()
    command.upgrade(alembic_config(url, settings.embedding_dim), revision, sql=sql)
    if revision != "head":
        return None
    if sql:
        print(hnsw_index.sync_sql(settings))
        return None
    for prefix in ("postgres://", "postgresql://"):  # as the settings accept it
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix):]
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        return hnsw_index.sync(engine, settings, echo or hnsw_index.log.info)
    finally:
        engine.dispose()
