"""Export everything kept about a user as one JSON document (docs/export.md).

``"format": "eros-export/2"`` (the default): every memory with its lineage,
sensitivity, provenance and metadata; every column of the user's sessions (outcomes,
attempts, error codes); the consolidation history with its details; every classification
run; the consolidation state; the user's ``erasure_log`` rows and withheld special-category
labels (``sensitivity_withheld``) (the sessions carry their
tombstones, ``erased_through_seq`` and ``erased_seqs``); with
``with_messages`` the chat messages. Everything kept about the user except vectors.
``eros-export/1`` stays readable: memories and session outcomes only.

Written piece by piece as the rows stream from the database: memory use does not grow with
the number of memories.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import IO, Any

from sqlalchemy import Engine

from eros.privacy.db import export_sql

FORMAT_1 = "eros-export/1"
FORMAT = FORMAT_2 = "eros-export/2"
FORMATS = {1: FORMAT_1, 2: FORMAT_2}


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


def _memory_v2(r: Any) -> dict[str, Any]:
    return {**_memory(r), "sensitivity": r.sensitivity, "embedding_model": r.embedding_model,
            "consolidation_seen_at": _iso(r.consolidation_seen_at)}


def _json_value(value: Any) -> Any:
    """A column's value as JSON: times as ISO 8601, ids as strings, numerics as numbers."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def _row(r: Any) -> dict[str, Any]:
    """Every column of a row, by name."""
    return {k: _json_value(v) for k, v in r._mapping.items()}


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
        # the id is what `eros forget --message` takes: a data subject can name the turn
        current["messages"].append({"id": str(r.id), "role": r.role, "channel": r.channel,
                                    "content": r.content, "sent_at": _iso(r.sent_at),
                                    "seq": r.seq})
    if current is not None:
        yield current


def export_user(engine: Engine, user_id: uuid.UUID, out: IO[str], *,
                with_messages: bool = False, version: int = 2) -> dict[str, int]:
    """Write the document (``eros-export/<version>``) to ``out``; returns counts (for the
    CLI's summary on stderr)."""
    if version not in FORMATS:
        raise ValueError(f"unknown export format {version}; expected one of {sorted(FORMATS)}")
    counts = {"memories": 0, "sessions": 0, "transcripts": 0}
    # one REPEATABLE READ transaction: every section agrees with every other
    with engine.connect() as conn, \
            conn.execution_options(isolation_level="REPEATABLE READ").begin():
        out.write("{\n")
        out.write(f'  "format": {json.dumps(FORMATS[version])},\n')
        out.write(f'  "user_id": {json.dumps(str(user_id))},\n')
        out.write(f'  "exported_at": {json.dumps(datetime.now(UTC).isoformat())},\n')
        out.write(f'  "with_messages": {json.dumps(with_messages)},\n')
        out.write('  "memories": ')
        memory = _memory_v2 if version == 2 else _memory
        counts["memories"] = _array(out, (memory(r)
                                          for r in export_sql.memories(conn, user_id)))
        out.write(',\n  "sessions": ')
        if version == 2:
            counts["sessions"] = _array(out, (_row(r)
                                              for r in export_sql.sessions_v2(conn, user_id)))
            counts.update(_v2_sections(conn, user_id, out))
        else:
            counts["sessions"] = _array(out, (_session(r)
                                              for r in export_sql.sessions(conn, user_id)))
        if with_messages:
            out.write(',\n  "transcripts": ')
            counts["transcripts"] = _array(out, _messages(export_sql.messages(conn, user_id)))
        out.write("\n}\n")
    return counts


def _v2_sections(conn: Any, user_id: uuid.UUID, out: IO[str]) -> dict[str, int]:
    """The sections ``eros-export/2`` adds, in document order."""
    counts: dict[str, int] = {}
    for name, rows in (("memory_history", export_sql.history(conn, user_id)),
                       ("classification_runs", export_sql.runs(conn, user_id)),
                       ("erasures", export_sql.erasures(conn, user_id)),
                       ("withheld_labels", export_sql.withheld(conn, user_id)),
                       ("indexed_turns", export_sql.indexed_turns(conn, user_id))):
        out.write(f',\n  "{name}": ')
        counts[name] = _array(out, (_row(r) for r in rows))
    state = export_sql.state(conn, user_id)
    out.write(',\n  "consolidation_state": ')
    out.write(json.dumps(_row(state) if state is not None else None, ensure_ascii=False,
                         default=str))
    return counts
