"""The embedding cache of ``eros eval`` (a local SQLite file, never the product database).

A full LoCoMo run embeds about ten thousand texts (memories, raw turns, questions); on two
shared cores that is most of its wall time, and the texts are the same from one run to the
next. The cache keeps each vector under the SHA-256 of (model, input type, text) — the text
itself is never stored — with the tokens it was counted as. Only ``eros eval`` uses it
(``--no-cache`` turns it off); results are identical with and without it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def cache_key(model: str, input_type: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{input_type}\0{text}".encode()).hexdigest()


class VectorCache:
    """``key → (vector, tokens)`` in one SQLite file (created on first use)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY,"
                         " vector BLOB NOT NULL, tokens INTEGER NOT NULL)")

    def get(self, keys: Sequence[str]) -> dict[str, tuple[list[float], int]]:
        found: dict[str, tuple[list[float], int]] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob, tokens in self._db.execute(
                    f"SELECT key, vector, tokens FROM vectors WHERE key IN ({marks})", chunk):
                found[key] = (np.frombuffer(blob, dtype=np.float64).tolist(), int(tokens))
        return found

    def put(self, rows: Sequence[tuple[str, Sequence[float], int]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (key, vector, tokens) VALUES (?, ?, ?)",
                [(k, np.asarray(v, dtype=np.float64).tobytes(), t) for k, v, t in rows])

    def close(self) -> None:
        self._db.close()
