"""``eros memories`` shows and filters the layer (issue 18)."""

from __future__ import annotations

import json
import uuid

from sqlalchemy import Engine, text

from tests.cli.conftest import Cli


def test_memories_show_and_filter_the_layer(cli: Cli, engine: Engine) -> None:
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, instance_id, content, category,"
            " embedding_model) VALUES (:u, NULL, 'Lives in Tokyo', 'fact', 'voyage-4-lite'),"
            " (:u, :p, 'Calls the companion Moon', 'preference', 'voyage-4-lite')"),
            {"u": user, "p": persona})
    human = cli("memories", str(user))
    assert human.code == 0, human.err
    assert f"relationship:{str(persona)[:8]}" in human.out and "profile" in human.out
    rel = json.loads(cli("memories", str(user), "--layer", "relationship", "--json").out)
    assert [(m["content"], m["layer"], m["instance_id"], m["embedding_model"]) for m in rel] == [
        ("Calls the companion Moon", "relationship", str(persona), "voyage-4-lite")]
    prof = json.loads(cli("memories", str(user), "--layer", "profile", "--json").out)
    assert [m["content"] for m in prof] == ["Lives in Tokyo"]
