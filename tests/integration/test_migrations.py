"""The migrations themselves: upgrade, no drift against the metadata, downgrade, upgrade."""

from __future__ import annotations

from alembic import command
from sqlalchemy import create_engine, inspect, text

from tests.support.services import TemplateDatabases, alembic_config


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
    command.upgrade(config, "head")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names(schema="engine"))
        assert {"chat_sessions", "chat_messages", "companion_memories",
                "classification_runs", "memory_history", "consolidation_state"} <= tables
        indexes = {i["name"] for i in inspect(conn).get_indexes("chat_sessions", schema="engine")}
        assert "ix_chat_sessions_claimable" in indexes
        method = conn.execute(text(
            "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam"
            " WHERE c.relname = 'ix_companion_memories_embedding_hnsw'")).scalar()
        assert method == "hnsw"
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
