"""The writes of a consolidation pass, in its one write transaction under the per-user lock:
the lock itself, the rows still current (locked, with their provenance), the new canonical
rows, the members that stop being current, the kept rows' provenance, importance and labels,
and the history. The pass's reads are :mod:`eros.consolidation.db.consolidation_sql`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

from sqlalchemy import Connection, text

from eros.consolidation.core.consolidation_plan import Change, HistoryEntry, NewRow
from eros.core.sensitivity import SENSITIVITY_ORDER
from eros.memory.core.provenance import Provenance
from eros.memory.db.provenance_sql import array_text, provenance_of
from eros.memory.db.user_lock import LOCK_KEY, LOCK_NAMESPACE
from eros.memory.db.write_sql import Float4Array

TRY_LOCK = text(f"SELECT pg_try_advisory_xact_lock({LOCK_KEY})")

# Which rows are still current, locked, and their provenance (what a result inherits) in
# the same statement: a chunk's write is a handful of statements, each a round trip.
LOCK_CURRENT = text("""
SELECT id, source_seqs, source_fallback FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'current'
 FOR UPDATE
""")

APPLY_CHANGES = text("""
UPDATE engine.companion_memories AS m
   SET status = c.status, replaced_by = c.replaced_by, replaced_at = now(),
       consolidation_seen_at = COALESCE(m.consolidation_seen_at, now())
  FROM unnest(CAST(:ids AS uuid[]), CAST(:statuses AS text[]), CAST(:targets AS uuid[]))
       AS c(id, status, replaced_by)
 WHERE m.id = c.id AND m.status = 'current'
""")

# The rows a pass keeps, in one UPDATE: a kept result's provenance (the
# union of its cluster's), its importance, and the "judged" stamp of the judged rows still
# current. A 2 KB row's update is never HOT (no room on its page): each rewrite inserts the
# row into every index again, HNSW included, so a row is rewritten once, and only when one of
# its values changes.
UPDATE_KEPT = text("""
UPDATE engine.companion_memories AS m
   SET source_seqs = CASE WHEN c.set_sources THEN CAST(c.seqs AS bigint[])
                          ELSE m.source_seqs END,
       source_fallback = CASE WHEN c.set_sources THEN c.fallback ELSE m.source_fallback END,
       importance = COALESCE(c.importance, m.importance),
       consolidation_seen_at = CASE WHEN c.seen THEN COALESCE(m.consolidation_seen_at, now())
                                    ELSE m.consolidation_seen_at END
  FROM unnest(CAST(:ids AS uuid[]), CAST(:set_sources AS boolean[]), CAST(:seqs AS text[]),
              CAST(:fallbacks AS boolean[]), CAST(:importances AS double precision[]),
              CAST(:seen AS boolean[]))
       AS c(id, set_sources, seqs, fallback, importance, seen)
 WHERE m.id = c.id AND m.status = 'current'
   AND ((c.set_sources AND (m.source_seqs IS DISTINCT FROM CAST(c.seqs AS bigint[])
                            OR m.source_fallback IS DISTINCT FROM c.fallback))
        OR c.importance IS NOT NULL
        OR (c.seen AND m.consolidation_seen_at IS NULL))
""")

# The result of a merge (a kept member or a new canonical) takes the most sensitive label of
# itself and the memories merged or superseded into it (order: core/sensitivity.py), so a
# consolidated memory never loses a special category. Only the given pairs are read.
KEEP_MOST_SENSITIVE = text("""
WITH pair AS (
    SELECT * FROM unnest(CAST(:results AS uuid[]), CAST(:members AS uuid[])) AS p(result_id, id)
    UNION SELECT r, r FROM unnest(CAST(:results AS uuid[])) AS r
), ranked AS (
    SELECT p.result_id, min(array_position(CAST(:labels AS text[]), m.sensitivity)) AS rank
      FROM pair p JOIN engine.companion_memories m ON m.id = p.id
     WHERE m.sensitivity IS NOT NULL
     GROUP BY p.result_id
)
UPDATE engine.companion_memories AS m SET sensitivity = (CAST(:labels AS text[]))[r.rank]
  FROM ranked r
 WHERE m.id = r.result_id AND r.rank IS NOT NULL
   AND m.sensitivity IS DISTINCT FROM (CAST(:labels AS text[]))[r.rank]
""")


# The new canonical rows in ONE statement, their values as parallel arrays (a row's
# provenance as bigint[] text, its metadata as JSON text) and the vectors as one flat real[]
# in binary, sliced per row (as a classify's memories are written, eros/memory/db/write_sql):
# the statement triggers (the sketch mirror with its nearest-cell probe, the backlog) fire
# once a pass, not once a row (an executemany of ~50 one-row INSERTs), and no vector is
# formatted as text by the worker nor parsed back by the server (~1.3 ms a vector on a
# loaded 2-core machine, ~6 s of a 50k first pass's ~4,700 canonical rows). The rows go in
# in the given order.
INSERT_CANONICAL = text("""
INSERT INTO engine.companion_memories
       (id, user_id, instance_id, session_id, content, category, importance, embedding,
        created_at, model, embedding_model, metadata, source_seqs, source_fallback,
        consolidation_seen_at)
SELECT r.id, CAST(:user_id AS uuid), r.instance_id, NULL, r.content, r.category,
       r.importance, CAST(f.v[(r.n - 1) * f.dim + 1 : r.n * f.dim] AS vector), r.created_at,
       CAST(:model AS text), CAST(:embedding_model AS text), CAST(r.meta AS jsonb),
       CAST(r.seqs AS bigint[]), r.fallback, now()
  FROM unnest(CAST(:ids AS uuid[]), CAST(:instances AS uuid[]), CAST(:contents AS text[]),
              CAST(:categories AS text[]), CAST(:importances AS double precision[]),
              CAST(:created AS timestamptz[]), CAST(:metas AS text[]), CAST(:seqs AS text[]),
              CAST(:fallbacks AS boolean[]))
       WITH ORDINALITY AS r(id, instance_id, content, category, importance, created_at, meta,
                            seqs, fallback, n)
 CROSS JOIN (SELECT CAST(:vectors AS real[]) AS v, CAST(:dim AS integer) AS dim) AS f
 ORDER BY r.n
""")

# The pass's history rows in one statement (an executemany was one INSERT a row: ~26 ms a
# pass of ~50 rows); ids are given in the entries' order.
INSERT_HISTORY = text("""
INSERT INTO engine.memory_history (user_id, action, result_id, source_ids, model, details)
SELECT CAST(:user_id AS uuid), h.action, h.result_id, CAST(h.sources AS uuid[]), h.model,
       CAST(h.details AS jsonb)
  FROM unnest(CAST(:actions AS text[]), CAST(:results AS uuid[]), CAST(:sources AS text[]),
              CAST(:models AS text[]), CAST(:details AS text[]))
       WITH ORDINALITY AS h(action, result_id, sources, model, details, n)
 ORDER BY h.n
""")


def try_lock(conn: Connection, user_id: uuid.UUID) -> bool:
    """The per-user pass lock, held until this transaction ends; False if another has it."""
    return bool(conn.execute(TRY_LOCK, {"ns": LOCK_NAMESPACE, "user_id": str(user_id)})
                .scalar_one())


def lock_current(conn: Connection, ids: Sequence[uuid.UUID]
                 ) -> dict[uuid.UUID, Provenance | None]:
    """Which of ``ids`` are still current, row-locked until commit, with their recorded
    provenance (None: not recorded)."""
    if not ids:
        return {}
    return {r.id: provenance_of(r) for r in conn.execute(LOCK_CURRENT, {"ids": list(ids)})}


def insert_canonical(conn: Connection, user_id: uuid.UUID,
                     rows: Sequence[tuple[NewRow, list[float]]], *, model: str,
                     prompt_version: str, pass_id: str,
                     embedding_model: str | None = None,
                     sources: Mapping[uuid.UUID, Provenance | None] | None = None) -> None:
    """The new canonical rows; ``sources`` gives each its provenance (the union of its
    members', core/provenance.py ``merged``), by row id."""
    if not rows:
        return
    known = sources or {}
    dim = len(rows[0][1])
    if any(len(vector) != dim for _, vector in rows):  # the flat array is sliced by dim
        raise ValueError("canonical rows' vectors differ in length")
    provenance = [known.get(row.id) for row, _ in rows]
    conn.execute(INSERT_CANONICAL, {
        "user_id": user_id, "model": model, "embedding_model": embedding_model,
        "ids": [row.id for row, _ in rows], "instances": [row.instance_id for row, _ in rows],
        "contents": [row.content for row, _ in rows],
        "categories": [row.category for row, _ in rows],
        "importances": [row.importance for row, _ in rows],
        "vectors": Float4Array(chain.from_iterable(vector for _, vector in rows)),
        "dim": dim,
        "created": [row.created_at for row, _ in rows],
        "metas": [json.dumps({"consolidated_from": [str(i) for i in row.source_ids],
                              "prompt_version": prompt_version,
                              "consolidation_pass": pass_id}) for row, _ in rows],
        "seqs": [array_text(p.seqs) if p is not None else None for p in provenance],
        "fallbacks": [p.fallback if p is not None else False for p in provenance]})


def apply_changes(conn: Connection, changes: Sequence[Change]) -> int:
    """Members stop being current (the caller takes them out of the backlog: nothing
    compares them again)."""
    if not changes:
        return 0
    result = conn.execute(APPLY_CHANGES, {
        "ids": [c.memory_id for c in changes], "statuses": [c.status for c in changes],
        "targets": [c.replaced_by for c in changes]})
    return int(result.rowcount)


def update_kept(conn: Connection, *,
                sources: Sequence[tuple[uuid.UUID, Provenance | None]] = (),
                importance: Sequence[tuple[uuid.UUID, float]] = (),
                seen: Sequence[uuid.UUID] = ()) -> None:
    """Kept rows still current, each rewritten once: new provenance (``sources``), a new
    importance, and the "judged" stamp (``seen``, where it is not set yet)."""
    ids = list(dict.fromkeys([*(i for i, _ in sources), *(i for i, _ in importance), *seen]))
    if not ids:
        return
    given = dict(sources)
    values = dict(importance)
    judged = set(seen)
    conn.execute(UPDATE_KEPT, {
        "ids": ids, "set_sources": [i in given for i in ids],
        "seqs": [array_text(p.seqs) if (p := given.get(i)) else None for i in ids],
        "fallbacks": [p.fallback if (p := given.get(i)) else False for i in ids],
        "importances": [values.get(i) for i in ids], "seen": [i in judged for i in ids]})


def insert_history(conn: Connection, user_id: uuid.UUID, entries: Sequence[HistoryEntry], *,
                   model: str | None, run: dict[str, Any]) -> None:
    if entries:
        conn.execute(INSERT_HISTORY, {
            "user_id": user_id, "actions": [e.action for e in entries],
            "results": [e.result_id for e in entries],
            "sources": ["{" + ",".join(str(i) for i in e.source_ids) + "}" for e in entries],
            "models": [model if e.details.get("kind") == "llm" else None for e in entries],
            "details": [json.dumps({**e.details, "run": run}) for e in entries]})


def keep_most_sensitive(conn: Connection,
                        pairs: Sequence[tuple[uuid.UUID, uuid.UUID]]) -> None:
    """``pairs``: (result id, member id) of the applied steps."""
    if pairs:
        conn.execute(KEEP_MOST_SENSITIVE, {"results": [r for r, _ in pairs],
                                           "members": [m for _, m in pairs],
                                           "labels": list(SENSITIVITY_ORDER)})
