"""Issue 34: the memories' HNSW index exists only where a configured plan reads it.

Recall reads it only with RECALL_QUANTIZED_SCAN=false, consolidation only with
CONSOLIDATION_HNSW_ABOVE > 0; `eros migrate` (eros.db.migrate.upgrade) builds it CONCURRENTLY
for those settings and drops it otherwise, and a process configured to read it refuses to start
while it is missing."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, create_engine, text

from eros.db import hnsw_index
from eros.db.engine import check_database
from eros.db.migrate import upgrade
from eros.errors import ConfigError
from eros.settings import Settings, load_settings
from testkit.services import TemplateDatabases

READS = load_settings(recall_quantized_scan=False)
DEFAULTS = load_settings()


def _definition(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return conn.execute(text(  # type: ignore[no-any-return]
            "SELECT pg_get_indexdef(to_regclass('engine.ix_companion_memories_embedding_hnsw'))"
        )).scalar()


def test_nothing_reads_it_with_the_defaults(engine: Engine) -> None:
    assert hnsw_index.readers(DEFAULTS) == []
    assert hnsw_index.readers(READS) == ["RECALL_QUANTIZED_SCAN=false"]
    assert hnsw_index.readers(load_settings(consolidation_hnsw_above=50000)) == [
        "CONSOLIDATION_HNSW_ABOVE=50000"]
    assert _definition(engine) is None  # a migrated database under the defaults
    check_database(engine, DEFAULTS)  # and a default process starts


def test_sync_builds_keeps_and_drops_it_as_the_settings_say(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding)"
            " SELECT gen_random_uuid(), 'm' || g, 'fact', CAST(array_fill(g::real, ARRAY[512])"
            " AS vector) FROM generate_series(1, 50) g"))
    lines: list[str] = []
    assert hnsw_index.sync(engine, READS, lines.append) == "built"
    definition = _definition(engine)
    assert definition is not None
    assert "USING hnsw (embedding vector_cosine_ops)" in definition
    assert definition.endswith("WHERE (status = 'current'::text)")
    assert lines[0].startswith("building the memories' HNSW index for RECALL_QUANTIZED_SCAN=false")
    assert lines[1].startswith("built the memories' HNSW index in ")
    with engine.connect() as conn:
        assert hnsw_index.state(conn) == "valid"
        hnsw_index.check(conn, READS)
    assert hnsw_index.sync(engine, READS, lines.append) == "present"  # idempotent
    assert len(lines) == 2
    assert hnsw_index.sync(engine, DEFAULTS, lines.append) == "dropped"
    assert _definition(engine) is None and "no plan reads it" in lines[2]
    assert hnsw_index.sync(engine, DEFAULTS, lines.append) == "absent"


def test_an_interrupted_concurrent_build_is_built_again(engine: Engine) -> None:
    """CREATE INDEX CONCURRENTLY that fails leaves an INVALID index: not "present"."""
    hnsw_index.sync(engine, READS)
    with engine.begin() as conn:  # what a cancelled concurrent build leaves
        conn.execute(text("UPDATE pg_index SET indisvalid = false WHERE indexrelid ="
                          " 'engine.ix_companion_memories_embedding_hnsw'::regclass"))
    with engine.connect() as conn:
        assert hnsw_index.state(conn) == "invalid"
        with pytest.raises(ConfigError):
            hnsw_index.check(conn, READS)
    assert hnsw_index.sync(engine, READS) == "built"
    with engine.connect() as conn:
        assert hnsw_index.state(conn) == "valid"


@pytest.mark.parametrize(("settings", "variable"), [
    (READS, "RECALL_QUANTIZED_SCAN=false"),
    (load_settings(consolidation_hnsw_above=30000), "CONSOLIDATION_HNSW_ABOVE=30000"),
])
def test_a_process_that_reads_a_missing_index_refuses_to_start(
        engine: Engine, settings: Settings, variable: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_database(engine, settings)
    message = str(err.value)
    assert variable in message and "`eros migrate`" in message
    assert "ix_companion_memories_embedding_hnsw" in message
    hnsw_index.sync(engine, settings)
    check_database(engine, settings)


def test_upgrade_keeps_the_index_in_step_after_the_migrations(
        templates: TemplateDatabases, capsys: pytest.CaptureFixture[str]) -> None:
    url, fresh_url = templates.empty(), templates.empty()
    engine = create_engine(url)
    try:
        assert upgrade(url, revision="0030", settings=DEFAULTS) is None  # not at head
        kept = _definition(engine)
        assert kept is not None  # 0028's, untouched
        # 0031 leaves it: a deployment that reads it keeps its graph, not rebuilt
        assert upgrade(url, settings=READS) == "present"
        assert _definition(engine) == kept
        assert upgrade(url, settings=READS) == "present"
        assert upgrade(url, settings=DEFAULTS) == "dropped"
        assert _definition(engine) is None
        assert upgrade(url, settings=READS) == "built"
        assert _definition(engine) == kept
        # a fresh database ends in the same state as the upgraded one
        fresh = create_engine(fresh_url)
        try:
            assert upgrade(fresh_url, settings=READS) == "present"
            assert _definition(fresh) == kept
            assert upgrade(fresh_url, settings=DEFAULTS) == "dropped"
            assert _definition(fresh) is None
        finally:
            fresh.dispose()
    finally:
        engine.dispose()
        templates.drop(url)
        templates.drop(fresh_url)
    capsys.readouterr()
    upgrade("postgresql+psycopg://localhost/eros", sql=True, settings=READS)
    printed = capsys.readouterr().out
    assert printed.rstrip().endswith(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_companion_memories_embedding_hnsw ON"
        " engine.companion_memories USING hnsw (embedding vector_cosine_ops) WHERE status ="
        " 'current';")
    upgrade("postgresql+psycopg://localhost/eros", sql=True, settings=DEFAULTS)
    assert "DROP INDEX CONCURRENTLY IF EXISTS engine.ix_companion_memories_embedding_hnsw;" \
        in capsys.readouterr().out
