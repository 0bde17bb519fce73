"""The export reads through a server-side cursor: rows arrive in batches, so a user with 100k
memories never sits in the client's memory at once."""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, text

from eros.privacy.db import export_sql


def test_memories_stream_from_a_server_side_cursor(engine: Engine) -> None:
    user = uuid.uuid4()
    n = export_sql.BATCH * 3
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category)"
            " SELECT :u, 'memory ' || g, 'fact' FROM generate_series(1, :n) g"),
            {"u": user, "n": n})
    with engine.connect() as conn, conn.begin():
        rows = export_sql.memories(conn, user)
        first = next(rows)
        # the statement is an open cursor on the server, not a fetched result
        assert conn.execute(text("SELECT count(*) FROM pg_cursors")).scalar() == 1
        assert first.content.startswith("memory ")
        assert 1 + sum(1 for _ in rows) == n
