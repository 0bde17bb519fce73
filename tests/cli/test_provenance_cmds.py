"""Provenance at the edge (issue 24), as subprocesses: ``eros memories --sources`` shows the
turns each memory came from, ``eros export`` carries them, ``eros forget --message`` erases a
message and what was derived from it."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import Engine, text

from testkit.data import add_session
from tests.cli.conftest import Cli


def _seed(engine: Engine, user: uuid.UUID) -> tuple[list[int], list[uuid.UUID]]:
    """Turns "I live in Lyon" / "nice" / "I like jazz"; a cited memory, a fallback one and
    one from before provenance."""
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "I live in Lyon"), ("assistant", "nice"),
                                 ("user", "I like jazz")], user_id=user)
        rows = conn.execute(text("SELECT id, seq FROM engine.chat_messages WHERE session_id = :s"
                                 " ORDER BY seq"), {"s": sid}).all()
        seqs = [r.seq for r in rows]
        conn.execute(text(
            "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
            " source_seqs, source_fallback, created_at) VALUES"
            " (:s, :u, 'Lives in Lyon', 'fact', :a, false, now() - interval '2 minutes'),"
            " (:s, :u, 'Likes jazz', 'preference', :w, true, now() - interval '1 minute'),"
            " (NULL, :u, 'Has a cat', 'fact', NULL, false, now())"),
            {"s": sid, "u": user, "a": [seqs[0]], "w": seqs})
    return seqs, [r.id for r in rows]


def test_memories_sources_shows_the_turns(cli: Cli, engine: Engine) -> None:
    user = uuid.uuid4()
    seqs, _ = _seed(engine, user)
    human = cli("memories", str(user), "--sources")
    assert human.code == 0, human.err
    out = human.out
    assert f"sources (cited): seq {seqs[0]}\n      [{seqs[0]}] user: I live in Lyon" in out
    assert "sources (window (no valid citation)): seq " + ", ".join(map(str, seqs)) in out
    assert f"[{seqs[1]}] assistant: nice" in out
    assert "Has a cat\n    sources: not recorded" in out
    doc = {m["content"]: m for m in json.loads(
        cli("memories", str(user), "--sources", "--json").out)}
    assert doc["Lives in Lyon"]["sources"] == [seqs[0]]
    assert doc["Lives in Lyon"]["source_turns"][0] | {"session_id": None, "sent_at": None} == {
        "seq": seqs[0], "stored": True, "role": "user", "content": "I live in Lyon",
        "session_id": None, "sent_at": None}
    assert doc["Likes jazz"]["source_fallback"] is True
    assert doc["Has a cat"]["sources"] is None and doc["Has a cat"]["source_turns"] == []
    # without the flag the listing is unchanged
    assert "sources" not in cli("memories", str(user)).out


def test_export_carries_sources_and_forget_message_erases_what_cites_it(
        cli: Cli, engine: Engine) -> None:
    user = uuid.uuid4()
    seqs, ids = _seed(engine, user)
    doc = json.loads(cli("export", str(user), "--with-messages").out)
    sources = {m["content"]: (m["sources"], m["source_fallback"]) for m in doc["memories"]}
    assert sources == {"Lives in Lyon": ([seqs[0]], False), "Likes jazz": (seqs, True),
                       "Has a cat": (None, False)}
    assert {m["seq"] for t in doc["transcripts"] for m in t["messages"]} == set(seqs)
    res = cli("forget", "--message", str(ids[1]), "--yes", "--json")  # "nice": the window
    assert res.code == 0, res.err
    assert json.loads(res.out)["memories"] == 1
    listing = json.loads(cli("memories", str(user), "--sources", "--json").out)
    assert {m["content"] for m in listing} == {"Lives in Lyon", "Has a cat"}
    assert cli("forget", "--message", str(ids[1]), "--persona", str(user)).code == 2
    assert cli("forget", str(user), "--message", str(ids[0])).code == 2
    # the whole conversation (issue 32): its messages and what came from it alone; listed
    with engine.connect() as conn:
        sid = conn.execute(text("SELECT session_id FROM engine.chat_messages WHERE id = :m"),
                           {"m": ids[0]}).scalar_one()
    assert cli("forget", "--session", str(sid), "--memory", str(ids[0])).code == 2
    res = cli("forget", "--session", str(sid), "--yes", "--json")
    assert res.code == 0, res.err
    counts = json.loads(res.out)
    assert (counts["messages"], counts["memories"]) == (2, 1)  # Lyon; the cat has no session
    listed = cli("erasures", str(user))
    assert listed.code == 0, listed.err
    assert f" session   user {user} session {sid} " in listed.out.splitlines()[0]
