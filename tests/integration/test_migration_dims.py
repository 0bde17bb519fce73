"""Every migration replayed with two vector sizes: the size is a parameter of the run
(``config.attributes["embedding_dim"]``, handed to the migrations by env.py), not read from
today's code or environment. Upgrade one revision at a time from an empty database to head and
down again to base; at every step each vector column of the schema has the run's size."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, text

from testkit.services import TemplateDatabases, alembic_config

#: two sizes besides the suite's 512 (e5's 384; a larger model's 1024).
DIMS = (384, 1024)

#: every vector-typed column at head, and its type (the size is the run's).
AT_HEAD = {
    ("companion_memories", "embedding"): "vector",
    ("companion_memories", "embedding_bq"): "bit",
    ("memory_cells", "centroid"): "vector",
    ("memory_sketches", "sketch"): "bit",
    ("memory_turns", "embedding"): "halfvec",
    ("memory_turns", "embedding_bq"): "bit",
    ("turn_sketch_centres", "centre"): "halfvec",
}


def _vector_columns(conn: Connection) -> dict[tuple[str, str], str]:
    """(table, column) -> declared type, e.g. ``vector(384)``, for the schema's tables."""
    rows = conn.execute(text(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_type t ON t.oid = a.atttypid"
        " WHERE n.nspname = 'engine' AND c.relkind = 'r' AND a.attnum > 0"
        " AND NOT a.attisdropped AND t.typname IN ('vector', 'halfvec', 'bit')")).all()
    return {(r.relname, r.attname): r.type for r in rows}


@pytest.mark.parametrize("dim", DIMS)
def test_every_migration_takes_the_run_s_vector_size(templates: TemplateDatabases,
                                                     dim: int) -> None:
    url = templates.empty()
    config = alembic_config(url)
    config.attributes["embedding_dim"] = dim
    revisions = [s.revision for s in reversed(list(
        ScriptDirectory.from_config(config).walk_revisions()))]
    engine = create_engine(url)
    seen: set[tuple[str, str]] = set()

    def check(at: str) -> None:
        with engine.connect() as conn:
            columns = _vector_columns(conn)
        seen.update(columns)
        assert all(t.endswith(f"({dim})") for t in columns.values()), (at, columns)

    try:
        for revision in revisions:
            command.upgrade(config, revision)
            check(revision)
        with engine.connect() as conn:
            assert {k: v.split("(")[0] for k, v in _vector_columns(conn).items()} == AT_HEAD
        assert seen == set(AT_HEAD)
        with engine.begin() as conn:  # the generated sketch and the triggers at this size
            conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, content, category, embedding)"
                " VALUES (gen_random_uuid(), 'm', 'fact',"
                " CAST(array_fill(1::real, ARRAY[:d]) AS vector))"), {"d": dim})
            assert conn.execute(text(
                "SELECT length(s.sketch) FROM engine.memory_sketches s")).scalar_one() == dim
        for below in [*reversed(revisions[:-1]), "base"]:
            command.downgrade(config, below)
            check(below)
        with engine.connect() as conn:
            assert _vector_columns(conn) == {}
    finally:
        engine.dispose()
        templates.drop(url)
