"""A user for the memory ledger's tests (issue 33): turns, memories embedded by the offline
hash embedder (so recall finds them), a merge in the lineage, a quarantined memory, a crisis
memory and one whose text is an attack on the page."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Engine, text

from eros.providers.base import Embedder
from testkit.data import add_session

#: memory texts that must reach the page as text, never as markup
SCRIPT = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='img'\">"
LINK = "<a href=\"javascript:document.title='link'\">click me</a>"


@dataclass(frozen=True)
class Seeded:
    user: uuid.UUID
    session: uuid.UUID
    #: content → memory id
    memories: dict[str, uuid.UUID]
    #: the chat messages' ids, in order
    messages: list[uuid.UUID]
    seqs: list[int]


def _vector(embedder: Embedder, content: str) -> str:
    vec = embedder.embed([content], input_type="document").vectors[0]
    return "[" + ",".join(repr(float(x)) for x in vec) + "]"


def seed(engine: Engine, embedder: Embedder, user: uuid.UUID | None = None) -> Seeded:
    user = user or uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "I live in Lyon with my cat Miso"),
                                 ("assistant", "Lyon is lovely"),
                                 ("user", "I love jazz, Coltrane mostly"),
                                 ("user", "Some nights I feel like giving up"),
                                 ("user", "我住在成都，最喜欢吃火锅")], user_id=user)
        conn.execute(text("UPDATE engine.chat_sessions SET classified_at = now(),"
                          " outcome = 'memories' WHERE id = :s"), {"s": sid})
        rows = conn.execute(text("SELECT id, seq FROM engine.chat_messages WHERE session_id = :s"
                                 " ORDER BY seq"), {"s": sid}).all()
        seqs = [int(r.seq) for r in rows]
        specs = [("Lives in Lyon", "fact", 0.8, [seqs[0]], None, "current"),
                 ("Has a cat named Miso", "fact", 0.6, [seqs[0]], None, "current"),
                 ("Loves jazz, especially Coltrane", "preference", 0.7, [seqs[2]], None,
                  "current"),
                 ("Feels like giving up some nights", "emotion", 0.9, [seqs[3]], "crisis",
                  "current"),
                 ("Likes jazz", "preference", 0.5, [seqs[2]], None, "merged"),
                 (SCRIPT, "fact", 0.4, [seqs[1]], None, "current"),
                 (LINK, "event", 0.3, None, None, "current"),
                 ("Password is hunter2", "fact", 0.2, [seqs[0]], None, "quarantined"),
                 ("住在成都，最喜欢吃火锅", "preference", 0.6, [seqs[4]], None, "current")]
        ids: dict[str, uuid.UUID] = {}
        for i, (content, category, imp, src, label, status) in enumerate(specs):
            ids[content] = conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, session_id, content, category,"
                " importance, source_seqs, sensitivity, status, embedding, embedding_model,"
                " created_at, metadata) VALUES (:u, :s, :c, :cat, :imp, :src, :label, :st,"
                " CAST(:v AS vector), :model, now() - make_interval(days => :age), :meta)"
                " RETURNING id"),
                {"u": user, "s": sid, "c": content, "cat": category, "imp": imp, "src": src,
                 "label": label, "st": status, "v": _vector(embedder, content),
                 "model": embedder.name, "age": 40 * i,
                 "meta": ('{"guard_quarantine": {"reason": "secret", "rule": "password",'
                          ' "layer": "secrets"}}' if status == "quarantined" else "{}")}
            ).scalar_one()
        canonical, merged = ids["Loves jazz, especially Coltrane"], ids["Likes jazz"]
        conn.execute(text("UPDATE engine.companion_memories SET replaced_by = :c,"
                          " replaced_at = now() WHERE id = :m"), {"c": canonical, "m": merged})
        conn.execute(text(
            "INSERT INTO engine.memory_history (user_id, action, result_id, source_ids)"
            " VALUES (:u, 'merge', :r, ARRAY[CAST(:m AS uuid)])"),
            {"u": user, "r": canonical, "m": merged})
    return Seeded(user, sid, ids, [r.id for r in rows], seqs)
