"""A change of embedding dimension: new columns and index built beside the live ones, one
switch transaction, then the old columns dropped (docs/operations.md).

Everything sized by the dimension moves at the switch: ``embedding`` (renamed in from
``embedding_next``), the generated ``embedding_bq`` sketch and its covering index, the HNSW
index (built beforehand, renamed), ``memory_sketches.sketch`` and ``memory_cells.centroid``
(cells are dropped: beat re-clusters) and ``memory_turns.embedding`` (the old model's turn
vectors are dropped, to be indexed again, and their sketch centres). The result is the schema
of ``eros/db/schema.py`` under the new ``EMBEDDING_DIM``.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from eros.db.schema import hnsw_index_sql

T = "engine.companion_memories"
HNSW = "ix_companion_memories_embedding_hnsw"
NEXT_HNSW = "ix_companion_memories_embedding_next_hnsw"


def column_dimension(conn: Connection, column: str) -> int | None:
    """The declared size of a vector column of companion_memories, None if it is absent."""
    return conn.execute(text(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = CAST(:t AS regclass)"
        " AND attname = :c AND NOT attisdropped"), {"t": T, "c": column}).scalar()


def prepare(conn: Connection, dim: int) -> None:
    """Add the columns beside the live ones (catalog only, instant); vectors stored inline."""
    conn.execute(text(f"ALTER TABLE {T} ADD COLUMN embedding_next vector({int(dim)}),"
                      " ADD COLUMN embedding_next_model text"))
    conn.execute(text(f"ALTER TABLE {T} ALTER COLUMN embedding_next SET STORAGE MAIN"))


def build_index(engine: Engine) -> bool:
    """The new HNSW index (current rows only, as 0028's), built CONCURRENTLY: recall and
    dreaming are not blocked — only when the live column has one (the index exists only where
    settings read it: eros/db/hnsw_index.py). Returns whether it was built."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        if conn.execute(text("SELECT to_regclass(:n)"), {"n": f"engine.{HNSW}"}).scalar() \
                is None:
            return False
        conn.execute(text(hnsw_index_sql(name=NEXT_HNSW, column="embedding_next",
                                         concurrently=True)))
        return True


def missing(conn: Connection, model: str) -> int:
    """Rows the beside columns do not yet hold a ``model`` vector for."""
    return int(conn.execute(text(
        f"SELECT count(*) FROM {T} WHERE embedding_next IS NULL"
        " OR embedding_next_model IS DISTINCT FROM :m"), {"m": model}).scalar_one())


def switch(conn: Connection, dim: int) -> None:
    """Make the beside columns the live ones, in the caller's transaction (all or nothing).
    The re-added generated sketch rewrites the table under an exclusive lock."""
    d = int(dim)
    for statement in (
        f"LOCK TABLE {T} IN ACCESS EXCLUSIVE MODE",
        f"DROP INDEX IF EXISTS engine.{HNSW}",  # absent where no plan reads it
        "DROP INDEX engine.ix_companion_memories_user_model",
        f"ALTER TABLE {T} DROP COLUMN embedding_bq",  # its covering index goes with it
        f"ALTER TABLE {T} RENAME COLUMN embedding TO embedding_old",
        f"ALTER TABLE {T} RENAME COLUMN embedding_model TO embedding_model_old",
        f"ALTER TABLE {T} RENAME COLUMN embedding_next TO embedding",
        f"ALTER TABLE {T} RENAME COLUMN embedding_next_model TO embedding_model",
        f"ALTER INDEX IF EXISTS engine.{NEXT_HNSW} RENAME TO {HNSW}",
        f"ALTER TABLE {T} ADD COLUMN embedding_bq bit({d})"
        f" GENERATED ALWAYS AS ((binary_quantize(embedding))::bit({d})) STORED",
        f"CREATE INDEX ix_companion_memories_recall_bq ON {T}"
        " (user_id, instance_id, category, status) INCLUDE (id, embedding_bq)",
        f"CREATE INDEX ix_companion_memories_user_model ON {T} (user_id, embedding_model)",
        "DELETE FROM engine.memory_cells",
        f"ALTER TABLE engine.memory_cells ALTER COLUMN centroid TYPE vector({d})",
        f"ALTER TABLE engine.memory_sketches ALTER COLUMN sketch TYPE bit({d}) USING NULL",
        "UPDATE engine.memory_sketches s SET sketch = m.embedding_bq, cell = NULL"
        f" FROM {T} m WHERE m.id = s.memory_id",
        # the turn vectors (0025) are the old model's: dropped, to be indexed again
        "DELETE FROM engine.memory_turns",
        # the sketch trigger (0029) names the column: off while its type changes
        "DROP TRIGGER memory_turns_place ON engine.memory_turns",
        "ALTER TABLE engine.memory_turns DROP COLUMN embedding_bq",  # and its covering index
        f"ALTER TABLE engine.memory_turns ALTER COLUMN embedding TYPE halfvec({d}) USING NULL",
        # set by the memory_turns_place trigger (0029); the old size's centres are gone
        f"ALTER TABLE engine.memory_turns ADD COLUMN embedding_bq bit({d})",
        "DELETE FROM engine.turn_sketch_centres",
        f"ALTER TABLE engine.turn_sketch_centres ALTER COLUMN centre TYPE halfvec({d})",
        "CREATE INDEX ix_memory_turns_recall ON engine.memory_turns"
        " (user_id, instance_id, status, cell) INCLUDE (seq, sensitivity, embedding_bq)",
        "CREATE TRIGGER memory_turns_place BEFORE INSERT OR UPDATE OF embedding,"
        " embedding_model, user_id ON engine.memory_turns FOR EACH ROW"
        " EXECUTE FUNCTION engine.memory_turns_place()",
    ):
        conn.execute(text(statement))


def drop_old(conn: Connection) -> None:
    conn.execute(text(f"ALTER TABLE {T} DROP COLUMN IF EXISTS embedding_old,"
                      " DROP COLUMN IF EXISTS embedding_model_old"))
