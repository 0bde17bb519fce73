"""Export everything kept about a user as one JSON document, ``"format": "eros-export/1"``
(docs/operations.md, "Privacy and erasure"). Written piece by piece as the rows stream from
the database: memory use does not grow with the number of memories."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

from sqlalchemy import Engine

from eros.db import export_sql

FORMAT = "eros-export/1"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _id(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None


def _memory(r: Any) -> dict[str, Any]:
    return {"id": str(r.id), "content": r.content, "category": r.category,
            "importance": r.importance,
            "layer": "profile" if r.instance_id is None else "relationship",
            "persona": _id(r.instance_id), "status": r.status,
            "created_at": _iso(r.created_at), "replaced_at": _iso(r.replaced_at),
            "lineage": {"replaced_by": _id(r.replaced_by),
                        "replaced": sorted(str(i) for i in r.replaced)},
            "session_id": _id(r.session_id), "model": r.model, "metadata": r.metadata,
            # provenance: the seqs of the messages it came from (the "seq" of each message in
            # "transcripts"); null = not recorded; fallback = the whole extraction window
            "sources": None if r.source_seqs is None else [int(s) for s in r.source_seqs],
            "source_fallback": r.source_fallback}


def _session(r: Any) -> dict[str, Any]:
    return {"id": str(r.id), "persona": _id(r.instance_id), "created_at": _iso(r.created_at),
            "last_active_at": _iso(r.last_active_at), "classified_at": _iso(r.classified_at),
            "outcome": r.outcome, "outcome_at": _iso(r.outcome_at),
            "memory_count": r.memory_count, "dead_lettered_at": _iso(r.dead_lettered_at)}


def _array(out: IO[str], items: Iterator[dict[str, Any]]) -> int:
    out.write("[")
    n = 0
    for item in items:
        out.write(",\n    " if n else "\n    ")
        out.write(json.dumps(item, ensure_ascii=False, default=str))
        n += 1
    out.write("\n  ]" if n else "]")
    return n


def _messages(rows: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """Consecutive rows of one session become one entry (rows arrive ordered by session)."""
    current: dict[str, Any] | None = None
    for r in rows:
        if current is None or current["session_id"] != str(r.session_id):
            if current is not None:
                yield current
            current = {"session_id": str(r.session_id), "messages": []}
        current["messages"].append({"role": r.role, "content": r.content,
                                    "sent_at": _iso(r.sent_at), "seq": r.seq})
    if current is not None:
        yield current


def export_user(engine: Engine, user_id: uuid.UUID, out: IO[str], *,
                with_messages: bool = False) -> dict[str, int]:
    """Write the document to ``out``; returns counts (for the CLI's summary on stderr)."""
    counts = {"memories": 0, "sessions": 0, "transcripts": 0}
    # one REPEATABLE READ transaction: memories, sessions and messages agree with each other
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        out.write("{\n")
        out.write(f'  "format": {json.dumps(FORMAT)},\n')
        out.write(f'  "user_id": {json.dumps(str(user_id))},\n')
        out.write(f'  "exported_at": {json.dumps(datetime.now(UTC).isoformat())},\n')
        out.write(f'  "with_messages": {json.dumps(with_messages)},\n')
        out.write('  "memories": ')
        counts["memories"] = _array(out, (_memory(r)
                                          for r in export_sql.memories(conn, user_id)))
        out.write(',\n  "sessions": ')
        counts["sessions"] = _array(out, (_session(r)
                                          for r in export_sql.sessions(conn, user_id)))
        if with_messages:
            out.write(',\n  "transcripts": ')
            counts["transcripts"] = _array(out, _messages(export_sql.messages(conn, user_id)))
        out.write("\n}\n")
    return counts
