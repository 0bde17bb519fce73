"""What the ``fused`` strategy reads besides the two searches: what the memories
citing the found turns say about them (:func:`turn_provenance`: only replaced memories cite it;
the most sensitive label of a memory citing it), and the turns a memory cites read by seq (its
quotes).

Both go through ``ix_companion_memories_source_seqs`` (GIN) or the primary key of
``engine.memory_turns``: a handful of index probes per recall, never a scan of the user.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import Connection, text

from eros.core.sensitivity import SENSITIVITY_ORDER
from eros.recall.core.fusion import TurnCandidate

# Per turn, what the user's memories citing it say about it, in one GIN probe a seq:
# - ``stale``: a replaced memory (merged or superseded) cites it and no current one does — a
#   knowledge update replaced what it says. Fallback provenance (the whole extraction window)
#   cites nothing in particular, on either side.
# - ``rank``: the most sensitive label (SENSITIVITY_ORDER position) of ANY memory citing it,
#   whatever its status and fallback window included: a label says what the turn is about, which
#   does not change when a newer fact replaces the memory ("a turn cited by a
#   labelled memory inherits the label"). The label is also copied onto the turn row when a
#   memory's label changes (turn_trust_sql.inherit_labels); reading it here as well means no
#   missed copy ever lets a labelled turn through ``include_sensitive=false``.
#
# One GIN probe per seq, fenced (OFFSET 0: the user filter is not pushed into the probe): left
# free, the planner reads the whole user through ix_companion_memories_user_model for a few
# seqs (≈100 ms for a 20k-memory user in a 200k-row table, against 0.1 ms probed; the GIN's
# element statistics are empty when every seq is cited by one or two rows).
_PROVENANCE = text("""
SELECT s.seq,
       bool_or(m.status = 'current' AND NOT m.source_fallback) AS current_cites,
       bool_or(m.status IN ('merged', 'superseded') AND NOT m.source_fallback) AS replaced_cites,
       min(array_position(CAST(:order AS text[]), m.sensitivity)) AS rank
  FROM unnest(CAST(:seqs AS bigint[])) AS s(seq)
 CROSS JOIN LATERAL (SELECT c.user_id, c.status, c.source_fallback, c.sensitivity
                       FROM engine.companion_memories c
                      WHERE c.source_seqs @> ARRAY[s.seq] OFFSET 0) AS m
 WHERE m.user_id = :user_id
 GROUP BY s.seq
""")


_BITMAP_ON = text("SELECT current_setting('enable_bitmapscan') AS was,"
                  " set_config('enable_bitmapscan', 'on', true)")
_BITMAP_BACK = text("SELECT set_config('enable_bitmapscan', :was, true)")


@dataclass(frozen=True)
class TurnProvenance:
    """What the citing memories say about some turns: the stale ones and inherited labels."""

    stale: frozenset[int] = frozenset()
    #: seq -> the most sensitive label of a memory citing it (only labelled seqs)
    labels: dict[int, str] = field(default_factory=dict)


def turn_provenance(conn: Connection, user_id: uuid.UUID,
                    seqs: Iterable[int]) -> TurnProvenance:
    """Which of ``seqs`` only replaced memories of ``user_id`` cite, and the label each
    inherits from the memories citing it."""
    wanted = sorted(set(seqs))
    if not wanted:
        return TurnProvenance()
    # a GIN index is read only by a bitmap scan, which recall's quantised scan switched off for
    # this transaction (recall_sql.configure_quantized): on for this statement, then back —
    # left off, each probe became a scan of the whole table (1 s timeouts on the fused bench
    # with citations)
    was = conn.execute(_BITMAP_ON).scalar_one()
    rows = conn.execute(_PROVENANCE, {"seqs": wanted, "user_id": user_id,
                                      "order": list(SENSITIVITY_ORDER)}).all()
    if was != "on":
        conn.execute(_BITMAP_BACK, {"was": was})
    return TurnProvenance(
        frozenset(int(r.seq) for r in rows if r.replaced_cites and not r.current_cites),
        {int(r.seq): SENSITIVITY_ORDER[r.rank - 1] for r in rows if r.rank is not None})


def stale_seqs(conn: Connection, user_id: uuid.UUID, seqs: Iterable[int]) -> set[int]:
    """The ``seqs`` that only replaced (merged or superseded) memories of ``user_id`` cite."""
    return set(turn_provenance(conn, user_id, seqs).stale)


_BY_SEQ = """
SELECT t.seq, t.session_id, t.said_at, c.content, t.sensitivity
  FROM engine.memory_turns t JOIN engine.chat_messages c ON c.seq = t.seq
 WHERE t.seq = ANY(CAST(:seqs AS bigint[])) AND t.user_id = :user_id AND t.status = 'current'
"""


def turns_by_seq(conn: Connection, user_id: uuid.UUID, seqs: Iterable[int], *,
                 include_sensitive: bool) -> list[TurnCandidate]:
    """``user_id``'s recallable turns among ``seqs`` (distance unknown: 2, the farthest)."""
    wanted = sorted(set(seqs))
    if not wanted:
        return []
    sql = _BY_SEQ + ("" if include_sensitive else " AND t.sensitivity IS NULL")
    rows = conn.execute(text(sql), {"seqs": wanted, "user_id": user_id})
    return [TurnCandidate(int(r.seq), str(r.session_id), r.said_at, r.content, 2.0,
                          r.sensitivity) for r in rows]
