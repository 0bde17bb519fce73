"""Trust on the turns recall layer through real worker processes (issue 31 item 4): the
``eros.relabel_sensitivity`` task labels a memory written without a label and, with it, the
turn it cites (and the turns by their own text), reporting the turns; the ``eros.recall``
task with ``include_sensitive: false`` then returns neither."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from celery import Celery
from sqlalchemy import Engine, text

from eros.providers.offline.hashing import hash_embedding
from eros.recall.db import turns_sql
from tests.e2e.conftest import Starter
from tests.support.data import add_session

pytestmark = pytest.mark.e2e


def test_the_relabel_task_labels_turns_and_recall_leaves_them_out(
        engine: Engine, start_worker: Starter, redis_url: str) -> None:
    user = uuid.uuid4()
    said = ["we talked about my week", "my migraines are back", "I like jazz a lot"]
    with engine.begin() as conn:
        sid = add_session(conn, [("user", s) for s in said], user_id=user,
                          idle_for=timedelta(minutes=1))
        rows = conn.execute(text("SELECT seq, sent_at FROM engine.chat_messages"
                                 " WHERE session_id = :s ORDER BY seq"), {"s": sid}).all()
        turns_sql.write_turns(conn, [turns_sql.TurnRow(
            r.seq, sid, user, None, r.sent_at, hash_embedding(s, 512), "any")
            for r, s in zip(rows, said, strict=True)])
        # written before labels existed: unlabelled, and it cites the first turn
        conn.execute(text(
            "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
            " embedding, source_seqs, status, created_at) VALUES (:s, :u,"
            " 'Sees a therapist for anxiety', 'fact', CAST(:v AS vector), :seqs, 'superseded',"
            " now() - interval '1 day')"),
            {"s": sid, "u": user, "v": str(hash_embedding("therapist", 512)),
             "seqs": [rows[0].seq]})
        conn.execute(text("UPDATE engine.memory_turns SET indexed_at = now() - interval"
                          " '1 day' WHERE user_id = :u"), {"u": user})
    start_worker("w1", concurrency=1)
    client = Celery(broker=redis_url, backend=redis_url)

    def recall(sensitive: bool) -> list[str]:
        result = client.send_task(
            "eros.recall", args=[str(user), "how was her week"],
            kwargs={"labels": "en", "strategy": "fused", "include_sensitive": sensitive},
            queue="eros.recall").get(timeout=60)
        return [t["content"] for t in result["turns"]]

    assert sorted(recall(False)) == sorted(said)  # nothing labelled yet
    done = client.send_task("eros.relabel_sensitivity", kwargs={},
                            queue="eros.consolidate").get(timeout=60)
    assert done["outcome"] == "relabelled" and done["done"], done
    assert (done["labelled"], done["turns_scanned"], done["turns_labelled"]) == (1, 3, 2), done
    with engine.connect() as conn:
        labels = dict(conn.execute(text("SELECT seq, sensitivity FROM engine.memory_turns"
                                        " WHERE user_id = :u"), {"u": user}).all())
    assert [labels[r.seq] for r in rows] == ["health", "health", None]
    assert recall(False) == [said[2]]
    assert sorted(recall(True)) == sorted(said)
