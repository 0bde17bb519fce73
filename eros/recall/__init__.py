"""The public recall API: ``from eros.recall import recall, recall_by_vector, render_prompt``.

The chat product (and the ``eros.recall`` task) call this at every turn. The package holds all
of recall — its pure ranking, fusion and rendering (``core``), its SQL (``db``), its use cases
(``services``: the memories' search, the turns as a recall layer, their cells, re-embedding),
its tasks and its settings section; this module keeps the public import path stable.

The names are loaded on first use, so that importing one part of recall (its settings
section, read by :mod:`eros.settings`) does not import all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eros.recall.services.recall import (
        RecalledMemory,
        RecallResult,
        recall,
        recall_by_vector,
        render_prompt,
    )

__all__ = ["RecallResult", "RecalledMemory", "recall", "recall_by_vector", "render_prompt"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from eros.recall.services import recall as service

        return getattr(service, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
