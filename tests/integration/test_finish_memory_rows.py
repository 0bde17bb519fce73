"""The finishing statement's memories travel as one JSON text (eros/dreaming/db/finish_sql.py,
issue 34): every column is stored as the eleven arrays stored it — quotes, backslashes,
non-ASCII and emoji in the text, NULL importance and sensitivity, nested metadata, source
seqs, a persona's row — and in the reply's order."""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, text

from eros.memory.core.claims import MemoryRow, Outcome
from testkit.data import add_session
from tests.support.classify import claim_and_begin, finish


def test_every_column_round_trips(engine: Engine) -> None:
    persona = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one"), ("user", "two")], instance_id=persona)
    attempt = claim_and_begin(engine, sid)
    tricky = 'Says "hi" \\ back, naïve café — 北京 🎉 {x} [1] \'q\''
    rows = [
        MemoryRow(tricky, "fact", 0.123456789012345, {"domain": "wörk", "n": [1, {"a": None}]},
                  [0.5] * 512, "profile", "m-1", (1, 2), False, "health", "current"),
        MemoryRow("Second", "preference", None, {}, [0.25] * 512, "relationship", None, None,
                  True, None, "unscreened"),
    ]
    with engine.connect() as conn:
        written = finish(conn.execution_options(isolation_level="AUTOCOMMIT"), attempt,
                         Outcome("memories", memory_count=2), through_seq=2, memories=rows)
    assert written == 2
    with engine.connect() as conn:
        stored = conn.execute(text(
            "SELECT content, category, importance, metadata, instance_id, embedding_model,"
            " source_seqs, source_fallback, sensitivity, status, embedding::text AS v"
            " FROM engine.companion_memories WHERE session_id = :s ORDER BY content"),
            {"s": sid}).all()
    assert [tuple(r)[:10] for r in stored] == [
        (tricky, "fact", 0.123456789012345, {"domain": "wörk", "n": [1, {"a": None}]}, None,
         "m-1", [1, 2], False, "health", "current"),
        ("Second", "preference", None, {}, persona, None, None, True, None, "unscreened"),
    ]
    assert stored[0].v == "[" + ",".join(["0.5"] * 512) + "]"
    assert stored[1].v == "[" + ",".join(["0.25"] * 512) + "]"
