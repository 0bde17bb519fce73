"""``eros forget`` records every erasure and exits 1 when one fails; ``eros erasures`` lists
them (issue 26). The failure is real: the forget's statement waits for a row lock this test
holds and is cancelled (SQLSTATE 57014, what a statement timeout raises)."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from sqlalchemy import Engine, text

from testkit.data import add_session
from tests.cli.conftest import Cli
from tests.support.privacy import wait_for_lock_wait


def test_a_failed_forget_exits_1_and_both_outcomes_are_listed(cli: Cli, engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        add_session(conn, [("user", "zqxclisentinel")], user_id=user)
    out: list[Any] = []
    with engine.connect() as blocker:
        blocker.execute(text("SELECT id FROM engine.chat_sessions WHERE user_id = :u"
                             " FOR UPDATE"), {"u": user})
        thread = threading.Thread(target=lambda: out.append(
            cli("forget", str(user), "--yes")))
        thread.start()
        wait_for_lock_wait(engine, "SELECT id FROM engine.chat_sessions", timeout=60)
        blocker.execute(text(
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE 'SELECT id FROM engine.chat_sessions%'"))
        blocker.rollback()
    thread.join(60)
    failed = out[0]
    assert failed.code == 1 and "57014" in failed.err and "zqxclisentinel" not in failed.err
    listed = cli("erasures", str(user), "--failed", "--json")
    assert listed.code == 0, listed.err
    rows = json.loads(listed.out)
    assert [(r["scope"], r["status"], r["error_code"], r["user_id"]) for r in rows] == [
        ("user", "failed", "57014", str(user))]
    # run it again: done, and both are listed (newest first), ids and counts only
    again = cli("forget", str(user), "--yes", "--json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["erasure_id"] > rows[0]["id"]
    table = cli("erasures", str(user))
    assert table.code == 0, table.err
    lines = table.out.strip().splitlines()
    assert len(lines) == 2 and " done " in lines[0] and " failed " in lines[1]
    assert "sessions_marked_read=1" in lines[0] and "57014" in lines[1]
