"""``eros consent`` shows and lifts a user's withdrawn labels, ``eros relabel`` labels rows
written without one (issue 32); as subprocesses."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import Engine, text

from eros.db import consent_sql
from tests.cli.conftest import Cli


def test_consent_lists_and_lifts_and_relabel_reports_progress(cli: Cli,
                                                             engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        consent_sql.withhold(conn, user, ["health", "beliefs"])
        conn.execute(text("INSERT INTO engine.companion_memories (user_id, content, category,"
                          " created_at) VALUES (:u, 'Has asthma', 'fact',"
                          " now() - interval '1 hour')"), {"u": user})
    res = cli("consent", str(user), "--allow", "health", "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["allowed"] == ["health"] and [w["label"] for w in doc["withheld"]] == ["beliefs"]
    assert cli("consent", str(user), "--allow", "spicy").code == 2
    res = cli("relabel", "--batch", "10", "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out) | {"scanned": 0} == {
        "scanned": 0, "labelled": 1, "erased": 0, "total_scanned": 1, "total_labelled": 1,
        "done": True}
