"""``eros export`` writes ``eros-export/2`` (issue 26): everything kept about the user except
vectors — memory history with its details, classification runs, consolidation state, every
session column, the user's erasure_log rows, sensitivity — into a file only
its owner can read; ``eros forget USER --sensitive LABEL`` and ``eros recall --no-sensitive``
through the command line."""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path

from sqlalchemy import Engine, text

from testkit.data import add_session
from tests.cli.conftest import Cli


def _seed(engine: Engine, user: uuid.UUID) -> dict[str, uuid.UUID]:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "I sleep badly"), ("assistant", "Oh no")],
                          user_id=user)
        conn.execute(text("UPDATE engine.chat_sessions SET outcome = 'memories', attempts = 2,"
                          " last_error = 'LLM HTTP 503', classified_at = now() WHERE id = :s"),
                     {"s": sid})
        ids = {content: conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, session_id, content, category,"
            " sensitivity, source_seqs) VALUES (:u, :s, :c, 'fact', :l, '{1}') RETURNING id"),
            {"u": user, "s": sid, "c": content, "l": label}).scalar_one()
            for content, label in (("Sleeps badly", "health"), ("Likes tea", None),
                                   ("Prays daily", "beliefs"))}
        conn.execute(text(
            "INSERT INTO engine.memory_history (user_id, action, result_id, source_ids, details)"
            " VALUES (:u, 'merge', :r, ARRAY[CAST(:r AS uuid)],"
            " '{\"canonical\": \"Likes tea a lot\"}')"), {"u": user, "r": ids["Likes tea"]})
        conn.execute(text(
            "INSERT INTO engine.classification_runs (session_id, user_id, attempt, outcome,"
            " error) VALUES (:s, :u, 1, 'retrying', 'LLM HTTP 503')"), {"s": sid, "u": user})
        conn.execute(text(
            "INSERT INTO engine.consolidation_state (user_id, last_outcome, merged_total)"
            " VALUES (:u, 'merged', 1)"), {"u": user})
    ids["session"] = sid
    return ids


def test_export_v2_has_everything_but_vectors_in_a_private_file(
        cli: Cli, engine: Engine, tmp_path: Path) -> None:
    user = uuid.uuid4()
    ids = _seed(engine, user)
    forgot = cli("forget", str(user), "--sensitive", "beliefs", "--yes", "--json")
    assert forgot.code == 0, forgot.err
    assert json.loads(forgot.out)["memories"] == 1

    out = tmp_path / "u.json"
    old = os.umask(0o022)  # a permissive umask: the file is private anyway
    try:
        res = cli("export", str(user), "--output", str(out))
        existing = tmp_path / "existing.json"
        existing.write_text("{}")
        existing.chmod(0o644)
        again = cli("export", str(user), "--output", str(existing))
    finally:
        os.umask(old)
    assert res.code == 0 and again.code == 0, res.err + again.err
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600
    doc = json.loads(out.read_text())
    assert doc["format"] == "eros-export/2"
    memories = {m["content"]: m for m in doc["memories"]}
    assert set(memories) == {"Sleeps badly", "Likes tea"}
    assert memories["Sleeps badly"]["sensitivity"] == "health"
    assert memories["Likes tea"]["sensitivity"] is None
    assert memories["Sleeps badly"]["sources"] == [1]
    assert all("embedding" not in m for m in doc["memories"])
    session = doc["sessions"][0]
    assert session["id"] == str(ids["session"]) and session["attempts"] == 2
    assert session["last_error"] == "LLM HTTP 503" and session["outcome"] == "memories"
    assert doc["memory_history"][0]["details"]["canonical"] == "Likes tea a lot"
    assert doc["classification_runs"][0]["error"] == "LLM HTTP 503"
    assert doc["consolidation_state"]["merged_total"] == 1
    assert [(e["scope"], e["status"]) for e in doc["erasures"]] == [("sensitive", "done")]
    assert [w["label"] for w in doc["withheld_labels"]] == ["beliefs"]  # issue 32
    assert "vector" not in out.read_text() and "embedding_bq" not in out.read_text()

    old_format = json.loads(cli("export", str(user), "--format", "1").out)
    assert old_format["format"] == "eros-export/1" and "erasures" not in old_format
    assert "sensitivity" not in old_format["memories"][0]


def test_recall_without_sensitive_memories(cli: Cli, engine: Engine) -> None:
    user = uuid.uuid4()
    _seed(engine, user)
    with engine.begin() as conn:  # vectors for recall (any direction will do)
        conn.execute(text("UPDATE engine.companion_memories SET embedding ="
                          " CAST(array_fill(0.1, ARRAY[512]) AS vector) WHERE user_id = :u"),
                     {"u": user})
    every = json.loads(cli("recall", str(user), "sleep", "--strategy", "decay", "--json").out)
    assert {m["content"] for m in every["memories"]} == {"Sleeps badly", "Likes tea",
                                                        "Prays daily"}
    res = cli("recall", str(user), "sleep", "--strategy", "decay", "--json", "--no-sensitive")
    assert res.code == 0, res.err
    assert [m["content"] for m in json.loads(res.out)["memories"]] == ["Likes tea"]


def test_export_writes_a_new_file_and_refuses_a_path_it_does_not_own(
        cli: Cli, engine: Engine, tmp_path: Path) -> None:
    """Issue 32: ``--output`` truncated an existing file in place, so a file another user had
    pre-created in a shared directory stayed theirs (and open to them). Now the document goes
    to a new 0600 file renamed into place; another user's file, a symlink or a directory is
    refused and left as it was; the transcript names each turn by id and channel."""
    user = uuid.uuid4()
    _seed(engine, user)
    with engine.connect() as conn:
        message_ids = {str(m) for m in conn.execute(text(
            "SELECT m.id FROM engine.chat_messages m JOIN engine.chat_sessions s"
            " ON s.id = m.session_id WHERE s.user_id = :u"), {"u": user}).scalars()}

    mine = tmp_path / "mine.json"
    mine.write_text("old")
    before = mine.stat().st_ino
    done = cli("export", str(user), "--output", str(mine), "--with-messages")
    assert done.code == 0, done.err
    assert mine.stat().st_ino != before  # a new file, not the old one rewritten
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600
    turns = json.loads(mine.read_text())["transcripts"][0]["messages"]
    assert {t["id"] for t in turns} == message_ids
    assert {t["channel"] for t in turns} == {"text"}
    assert [p.name for p in tmp_path.iterdir()] == ["mine.json"]  # no temporary file left

    theirs = tmp_path / "theirs.json"
    theirs.write_text("planted")
    theirs.chmod(0o666)
    if os.geteuid() == 0:
        os.chown(theirs, 65534, 65534)
    else:  # not root: a file we do not own is one in a directory we cannot chown into
        theirs = Path("/etc/hostname")
    link = tmp_path / "link.json"
    link.symlink_to(mine)
    for path in (theirs, link):
        refused = cli("export", str(user), "--output", str(path))
        assert refused.code != 0, path
        assert "refusing" in refused.err or "cannot write" in refused.err, refused.err
    if os.geteuid() == 0:
        assert theirs.read_text() == "planted" and theirs.stat().st_uid == 65534
    assert link.is_symlink() and json.loads(mine.read_text())["transcripts"]
