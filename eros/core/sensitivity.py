"""Special-category labels of a memory (GDPR art. 9; issue 26): the values
``companion_memories.sensitivity`` may hold (NULL = none). The database's check constraint
(``ck_companion_memories_sensitivity``, migration 0018) is built from this tuple."""

from __future__ import annotations

from typing import Final, Literal, get_args

Sensitivity = Literal["health", "crisis", "sexuality", "beliefs", "ethnicity", "biometric"]

#: every label, in the order the check constraint lists them.
SENSITIVITY_LABELS: Final[tuple[Sensitivity, ...]] = get_args(Sensitivity)
