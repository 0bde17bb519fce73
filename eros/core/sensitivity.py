"""Special-category labels of a memory (GDPR art. 9): the values
``companion_memories.sensitivity`` may hold (NULL = none). The database's check constraint
(``ck_companion_memories_sensitivity``, migration 0018) is built from this tuple."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, get_args

Sensitivity = Literal["health", "crisis", "sexuality", "beliefs", "ethnicity", "biometric"]

#: every label, in the order the check constraint lists them.
SENSITIVITY_LABELS: Final[tuple[Sensitivity, ...]] = get_args(Sensitivity)

#: most sensitive first: when consolidation merges memories of different labels, the merged
#: memory keeps the first of their labels in this order. ``crisis`` (a risk to the person now)
#: leads; then ``health``, ``sexuality``, ``biometric``, ``ethnicity``, ``beliefs`` (roughly:
#: how much harm a disclosure does, and how often a product must act on it).
SENSITIVITY_ORDER: Final[tuple[Sensitivity, ...]] = ("crisis", "health", "sexuality",
                                                     "biometric", "ethnicity", "beliefs")
#: the label ``eros.recall.core.render`` marks in a prompt, so a product can act on it
CRISIS: Final[Sensitivity] = "crisis"

#: who labels the memories and turns written without a label (``eros relabel --labeller``,
#: ``eros.relabel_sensitivity``'s ``labeller``; each keeps its own cursor): the offline cue
#: words, or the model
Labeller = Literal["offline", "model"]
LABELLERS: Final[tuple[Labeller, ...]] = get_args(Labeller)
OFFLINE_LABELLER: Final[Labeller] = "offline"
MODEL_LABELLER: Final[Labeller] = "model"
#: memories (then turns) a relabelling reads per transaction unless told, and the most
RELABEL_BATCH: Final = 1000
RELABEL_BATCH_MAX: Final = 100_000


def normalise_sensitivity(value: object) -> Sensitivity | None:
    """A model's ``"sensitivity"``: one of the labels (any case, surrounding spaces), else None
    — a missing, empty, ``"none"`` or unknown label means no special category."""
    if not isinstance(value, str):
        return None
    label = value.strip().lower()
    for known in SENSITIVITY_LABELS:
        if label == known:
            return known
    return None


def most_sensitive(labels: Iterable[str | None]) -> Sensitivity | None:
    """The most sensitive of ``labels`` by :data:`SENSITIVITY_ORDER` (None when none is)."""
    found = {normalise_sensitivity(label) for label in labels}
    return next((label for label in SENSITIVITY_ORDER if label in found), None)
