"""The public recall API: ``from eros.recall import recall, recall_by_vector, render_prompt``.

The chat product (and the ``eros.recall`` task) call this at every turn. The package holds all
of recall — its pure ranking, fusion and rendering (``core``), its SQL (``db``) and its use
cases (``services``): the memories' search, the turns as a recall layer, their cells and the
re-embedding of a model change; this module keeps the public import path stable.
"""

from __future__ import annotations

from eros.recall.services.recall import (
    RecalledMemory,
    RecallResult,
    recall,
    recall_by_vector,
    render_prompt,
)

__all__ = ["RecallResult", "RecalledMemory", "recall", "recall_by_vector", "render_prompt"]
