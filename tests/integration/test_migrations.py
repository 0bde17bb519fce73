"""The migrations themselves: upgrade, no drift against the metadata, downgrade, upgrade."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from eros.db.migrate import upgrade
from eros.settings import load_settings
from testkit.services import TemplateDatabases, alembic_config


def test_upgrade_check_downgrade_upgrade(templates: TemplateDatabases) -> None:
    url = templates.empty()
    config = alembic_config(url)
    command.upgrade(config, "head")
    command.check(config)  # raises if the models and the migrated schema differ
    command.downgrade(config, "base")
    engine = create_engine(url)
    with engine.connect() as conn:
        tables = inspect(conn).get_table_names(schema="engine")
        assert set(tables) <= {"alembic_version"}
    upgrade(url)  # as `eros migrate`: the migrations, then the HNSW index as the settings need
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names(schema="engine"))
        assert {"chat_sessions", "chat_messages", "companion_memories",
                "classification_runs", "memory_history", "consolidation_state"} <= tables
        indexes = {i["name"] for i in inspect(conn).get_indexes("chat_sessions", schema="engine")}
        assert "ix_chat_sessions_claimable" in indexes
        # no plan reads the HNSW index with these settings (0031; eros/db/hnsw_index.py)
        assert conn.execute(text(
            "SELECT to_regclass('engine.ix_companion_memories_embedding_hnsw')")).scalar() is None
    engine.dispose()
    templates.drop(url)


def test_contract_insert_needs_only_contract_columns(engine) -> None:  # type: ignore[no-untyped-def]
    """The chat product inserts id, user_id, instance_id, last_active_at and nothing else."""
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.chat_sessions (id, user_id, instance_id, last_active_at)"
            " VALUES (gen_random_uuid(), gen_random_uuid(), NULL, now())"))
        sid = conn.execute(text("SELECT id FROM engine.chat_sessions")).scalar_one()
        conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content)"
                          " VALUES (:s, 'user', 'hi'), (:s, 'assistant', 'hello')"), {"s": sid})
        row = conn.execute(text("SELECT attempts, classified_through_seq, classified_at"
                                " FROM engine.chat_sessions")).one()
    assert (row.attempts, row.classified_through_seq, row.classified_at) == (0, 0, None)


def test_0008_mirrors_the_memories_that_exist_and_downgrades_cleanly(
        templates: TemplateDatabases) -> None:
    url = templates.empty()
    config = alembic_config(url)
    command.upgrade(config, "0007")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding, status)"
            " SELECT gen_random_uuid(), 'm' || g, 'fact', CAST(array_fill(g::real, ARRAY[512])"
            " AS vector), CASE WHEN g % 2 = 0 THEN 'current' ELSE 'merged' END"
            " FROM generate_series(1, 20) g"))
    command.upgrade(config, "0008")
    mirrored = ("SELECT count(*) FROM engine.companion_memories m JOIN engine.memory_sketches s"
                " ON s.memory_id = m.id AND s.user_id = m.user_id AND s.status = m.status"
                " AND s.sketch = m.embedding_bq AND s.cell IS NULL")
    with engine.connect() as conn:
        assert conn.execute(text(mirrored)).scalar_one() == 20
    command.downgrade(config, "0007")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names(schema="engine"))
        assert not {"memory_sketches", "memory_cells"} & tables
        assert conn.execute(text("SELECT count(*) FROM pg_trigger WHERE tgrelid ="
                                 " 'engine.companion_memories'::regclass AND NOT tgisinternal"
                                 )).scalar_one() == 0
    engine.dispose()
    templates.drop(url)


def _hnsw_definition(conn) -> str:  # type: ignore[no-untyped-def]
    return str(conn.execute(text(
        "SELECT pg_get_indexdef('engine.ix_companion_memories_embedding_hnsw'::regclass)"
        )).scalar_one())


def test_0028_keeps_only_current_rows_in_the_graph_and_downgrades(
        templates: TemplateDatabases) -> None:
    """Issue 34 item 3: the memories' HNSW index is partial on current rows; the downgrade
    builds the full index again, and the rows in it are the rows a full build holds."""
    url = templates.empty()
    config = alembic_config(url)
    command.upgrade(config, "0027")
    engine = create_engine(url)
    with engine.begin() as conn:
        assert "WHERE" not in _hnsw_definition(conn)
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding, status)"
            " SELECT gen_random_uuid(), 'm' || g, 'fact', CAST(array_fill(g::real, ARRAY[512])"
            " AS vector), CASE WHEN g % 2 = 0 THEN 'current' ELSE 'merged' END"
            " FROM generate_series(1, 20) g"))
    command.upgrade(config, "0028")
    with engine.connect() as conn:
        definition = _hnsw_definition(conn)
        assert "USING hnsw (embedding vector_cosine_ops)" in definition
        assert definition.endswith("WHERE (status = 'current'::text)")
        valid = conn.execute(text(
            "SELECT indisvalid FROM pg_index WHERE indexrelid ="
            " 'engine.ix_companion_memories_embedding_hnsw'::regclass")).scalar_one()
        assert valid
    command.downgrade(config, "0027")
    with engine.connect() as conn:
        assert "WHERE" not in _hnsw_definition(conn)
    command.upgrade(config, "0029")
    with engine.connect() as conn:
        assert "WHERE (status = 'current'::text)" in _hnsw_definition(conn)
    engine.dispose()
    templates.drop(url)


def _hnsw_oid(conn) -> int | None:  # type: ignore[no-untyped-def]
    return conn.execute(text(  # type: ignore[no-any-return]
        "SELECT to_regclass('engine.ix_companion_memories_embedding_hnsw')::oid")).scalar()


def test_0031_leaves_the_hnsw_index_to_eros_migrate(
        templates: TemplateDatabases, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: 0031 takes the HNSW index out of the alembic schema and changes nothing
    itself, whatever the environment says (a migration reads none): the graph a deployment has
    is kept, not rebuilt; `eros migrate` then drops it when no plan reads it (the defaults) and
    keeps it when one does. The downgrade builds 0028's partial index again when it is
    missing."""
    url = templates.empty()
    config = alembic_config(url)
    command.upgrade(config, "0030")
    engine = create_engine(url)
    with engine.connect() as conn:
        before = _hnsw_oid(conn)
    assert before is not None
    monkeypatch.setenv("RECALL_QUANTIZED_SCAN", "false")
    command.upgrade(config, "0031")
    with engine.connect() as conn:
        assert _hnsw_oid(conn) == before  # kept, the same index
    command.downgrade(config, "0030")
    with engine.connect() as conn:
        assert _hnsw_oid(conn) == before  # present already: left as it is
    monkeypatch.delenv("RECALL_QUANTIZED_SCAN")
    command.upgrade(config, "0031")
    with engine.connect() as conn:
        assert _hnsw_oid(conn) == before  # the environment changes nothing
    assert upgrade(url, settings=load_settings(recall_quantized_scan=False)) == "present"
    with engine.connect() as conn:
        assert _hnsw_oid(conn) == before
    assert upgrade(url, settings=load_settings()) == "dropped"  # nothing reads it
    with engine.connect() as conn:
        assert _hnsw_oid(conn) is None
    command.downgrade(config, "0030")
    with engine.connect() as conn:
        assert _hnsw_definition(conn).endswith("WHERE (status = 'current'::text)")
    engine.dispose()
    templates.drop(url)


def test_0032_places_a_statements_rows_in_their_nearest_cells_at_once(
        templates: TemplateDatabases) -> None:
    """Issue 34 item 3: 0032's insert trigger ranks a statement's new rows against their
    users' centroids in one query; each row lands in the cell ``nearest_memory_cell`` names
    (a user with no cells and a row with no vector: NULL), and the downgrade brings back the
    per-row probe with the same result."""
    url = templates.empty()
    config = alembic_config(url)
    command.upgrade(config, "0031")
    engine = create_engine(url)
    clustered, plain = "00000000-0000-4000-8000-000000000001", \
        "00000000-0000-4000-8000-000000000002"
    vector = ("CAST(ARRAY(SELECT sin(g * 0.37 + d * :k) FROM generate_series(1, 512) d)"
              " AS vector)")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.memory_cells (user_id, cell, centroid)"
            f" SELECT CAST(:u AS uuid), g, {vector} FROM generate_series(0, 15) g"),
            {"u": clustered, "k": 0.011})
    insert = text(
        "INSERT INTO engine.companion_memories (user_id, content, category, embedding)"
        f" SELECT CAST(u AS uuid), :tag || g, 'fact', CASE WHEN g = 7 THEN NULL ELSE {vector} END"
        " FROM generate_series(1, 40) g, unnest(CAST(:users AS text[])) u")
    placed = text(
        "SELECT count(*) FILTER (WHERE s.cell IS NOT DISTINCT FROM"
        " engine.nearest_memory_cell(m.user_id, m.embedding)), count(s.cell), count(*)"
        " FROM engine.companion_memories m JOIN engine.memory_sketches s ON s.memory_id = m.id"
        " WHERE m.content LIKE :tag || '%'")
    results = {}
    for revision, tag in (("0032", "setwise"), ("0031", "per_row"), ("0032", "again")):
        if revision == "0032":
            command.upgrade(config, "0032")
        else:
            command.downgrade(config, "0031")
        with engine.begin() as conn:
            conn.execute(insert, {"tag": tag, "k": 0.013, "users": [clustered, plain]})
            results[tag] = tuple(conn.execute(placed, {"tag": tag}).one())
    # 80 rows; the clustered user's 39 with a vector sit in their nearest cell, the rest NULL
    assert results == {"setwise": (80, 39, 80), "per_row": (80, 39, 80), "again": (80, 39, 80)}
    with engine.connect() as conn:
        cells = conn.execute(text(
            "SELECT count(DISTINCT s.cell) FROM engine.memory_sketches s"
            " WHERE s.user_id = CAST(:u AS uuid)"), {"u": clustered}).scalar_one()
    assert cells > 1  # the rows spread over several cells: the ranking is per row
    engine.dispose()
    templates.drop(url)
