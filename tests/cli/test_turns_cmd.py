"""``eros turns backfill`` as a subprocess (issue 31 item 1): resumable with ``--limit``, a
dry run writes nothing, ``--json`` reports counts (never text)."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import Engine, text

from testkit.data import add_session
from tests.cli.conftest import Cli

TURNS = ["I moved to Tokyo last week", "The garden is full of tulips",
         "My sister visits in May"]


def _classified_before(engine: Engine) -> uuid.UUID:
    """A session classification read before it indexed turns: the watermark past every turn,
    no turn row."""
    with engine.begin() as conn:
        sid = add_session(conn, [("user", TURNS[0]), ("assistant", "Nice!"),
                                 ("user", TURNS[1]), ("user", TURNS[2])])
        conn.execute(text("UPDATE engine.chat_sessions SET classified_at = now(),"
                          " classified_through_seq = last_seq WHERE id = :s"), {"s": sid})
    return sid


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM engine.memory_turns")).scalar_one())


def test_turns_backfill_resumes_and_reports(cli: Cli, engine: Engine) -> None:
    _classified_before(engine)
    assert cli("turns", "backfill", "--help").code == 0
    dry = cli("turns", "backfill", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    assert json.loads(dry.out)["statuses"] == {"current": 3} and _count(engine) == 0
    first = cli("turns", "backfill", "--limit", "2", "--json")
    assert first.code == 0, first.err
    doc = json.loads(first.out)
    assert (doc["scanned"], doc["indexed"], doc["done"]) == (2, 2, False)
    rest = cli("turns", "backfill")
    assert rest.code == 0, rest.err
    assert "scanned 1, indexed (current 1)" in rest.out and "done" in rest.out
    assert _count(engine) == 3
    for said in TURNS:
        assert said not in first.out + rest.out + first.err + rest.err
