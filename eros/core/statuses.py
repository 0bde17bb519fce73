"""What a stored memory's and an indexed turn's ``status`` may be (``companion_memories.status``,
``memory_turns.status``): their check constraints are built from these tuples, and a row is
written ``current`` unless told otherwise."""

from __future__ import annotations

from typing import Final, Literal, get_args

#: ``current`` (recallable), ``merged`` and ``superseded`` (replaced by consolidation, kept as
#: lineage), ``quarantined`` (the memory guard rejected it), ``unscreened`` (written while the
#: guard's meaning layer had no model: never recalled nor consolidated until screened)
MemoryStatus = Literal["current", "merged", "superseded", "quarantined", "unscreened"]
MEMORY_STATUSES: Final[tuple[MemoryStatus, ...]] = get_args(MemoryStatus)
#: what a turn's ``status`` may be: ``current`` (recallable), ``quarantined`` (the memory
#: guard rejected it: never recalled), ``unscreened`` (indexed while the guard's meaning layer
#: had no model: never recalled until screened)
TurnStatus = Literal["current", "quarantined", "unscreened"]
TURN_STATUSES: Final[tuple[TurnStatus, ...]] = get_args(TurnStatus)
CURRENT: Final = "current"
