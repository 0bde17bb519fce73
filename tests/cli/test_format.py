"""Pure parts of the CLI: the session-file validator, the table, help on every command."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from click.testing import CliRunner

from eros.cli import main
from eros.cli._common import clip, table, width
from eros.dreaming.core.session_file import BadLine, SessionIn, iter_sessions
from eros.dreaming.services.ingest import corpus_lines

LINE = {"session_id": str(uuid.uuid4()), "user_id": str(uuid.uuid4()), "instance_id": None,
        "messages": [{"role": "user", "content": "hi", "sent_at": "2026-01-01T10:00:00+08:00"}]}


def _one(document: object) -> SessionIn | BadLine:
    return next(iter_sessions([json.dumps(document).encode()]))


def test_the_bundled_corpus_is_valid() -> None:
    items = list(iter_sessions(corpus_lines()))
    assert len(items) == 40 and all(isinstance(i, SessionIn) for i in items)


@pytest.mark.parametrize(("change", "reason"), [
    ({"messages": []}, "messages: List should have at least 1 item"),
    ({"instance_id": "x"}, "instance_id: Input should be a valid UUID"),
    ({"extra": 1}, "extra: Extra inputs are not permitted"),
    ({"last_active_at": "2025-01-01T00:00:00Z"}, "last_active_at is earlier than"),
    ({"messages": [{"role": "user", "content": "hi", "sent_at": "2026-01-01T10:00:00"}]},
     "messages.0.sent_at: Input should have timezone info"),
])
def test_bad_lines_say_which_field_and_why(change: dict[str, object], reason: str) -> None:
    item = _one({**LINE, **change})
    assert isinstance(item, BadLine) and reason in str(item) and str(item).startswith("line 1:")


def test_instance_id_is_required_but_may_be_null() -> None:
    missing = {k: v for k, v in LINE.items() if k != "instance_id"}
    assert isinstance(_one(missing), BadLine)
    assert isinstance(_one(LINE), SessionIn)


def test_last_active_defaults_to_the_last_message_and_shifting_moves_everything() -> None:
    item = _one(LINE)
    assert isinstance(item, SessionIn)
    assert item.active_at == item.messages[-1].sent_at
    moved = item.shifted(timedelta(days=3))
    assert moved.active_at - item.active_at == timedelta(days=3)


def test_table_lines_up_wide_characters() -> None:
    out = table(["a", "content"], [["林晓", "x"], ["ab", "y"]]).splitlines()
    assert width(out[2][:out[2].index("x")]) == width(out[3][:out[3].index("y")]) == 6
    assert width(clip("住在成都" * 10, 11)) <= 11 and clip("short", 10) == "short"


def test_every_command_has_help() -> None:
    runner = CliRunner()
    for name in main.commands:  # type: ignore[attr-defined]
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Usage: " in result.output
