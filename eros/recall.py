"""The public recall API: ``from eros.recall import recall, recall_by_vector, render_prompt``.

The chat product (and the ``eros.recall`` task) call this at every turn. The implementation is
the use case :mod:`eros.services.recall`; this module only keeps the public import path stable.
"""

from __future__ import annotations

from eros.services.recall import (
    RecalledMemory,
    RecallResult,
    recall,
    recall_by_vector,
    render_prompt,
)

__all__ = ["RecallResult", "RecalledMemory", "recall", "recall_by_vector", "render_prompt"]
