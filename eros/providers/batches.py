"""One embedding request per session, split only past the provider's per-request limits.

A session's candidates and the user's turns travel in ONE request: an embedding is
cheap, a round trip is not. Voyage refuses a request of more than 1,000 inputs, or whose
inputs add up to more than the model's per-request token limit (1M tokens for
voyage-3.5-lite, 320K for voyage-3.5, 120K for voyage-3-large and voyage-code-3). Only past
those is a list split, in order, and each request counted.

The token count is estimated from characters, one token a character: an upper bound for
English (about four characters a token) and about right for Chinese, so a split never comes
too late whatever the language.
"""

from __future__ import annotations

from collections.abc import Sequence

from eros.providers.base import Embedder, Embeddings, InputType

#: Voyage's most inputs in one request.
MAX_INPUTS = 1000
#: the smallest per-request token limit of Voyage's models (voyage-3-large, voyage-code-3).
MAX_REQUEST_TOKENS = 120_000


def request_slices(texts: Sequence[str], *, max_inputs: int = MAX_INPUTS,
                   max_tokens: int = MAX_REQUEST_TOKENS) -> list[slice]:
    """``texts`` cut, in order, into the fewest runs within both limits (one run for a
    session of ordinary size; a single text over ``max_tokens`` is a run of its own)."""
    out: list[slice] = []
    start, tokens = 0, 0
    for i, text in enumerate(texts):
        cost = max(1, len(text))
        if i > start and (i - start >= max_inputs or tokens + cost > max_tokens):
            out.append(slice(start, i))
            start, tokens = i, 0
        tokens += cost
    if start < len(texts):
        out.append(slice(start, len(texts)))
    return out


def embed_in_requests(embedder: Embedder, texts: Sequence[str], *,
                      input_type: InputType) -> tuple[Embeddings, int]:
    """Every text's vector, in order, from as few requests as the limits allow; the merged
    result (tokens summed) and how many requests it took."""
    parts = request_slices(texts)
    if len(parts) <= 1:
        return embedder.embed(list(texts), input_type=input_type), len(parts)
    vectors: list[list[float]] = []
    tokens, model = 0, embedder.name
    for part in parts:
        result = embedder.embed(list(texts[part]), input_type=input_type)
        vectors.extend(result.vectors)
        tokens += result.total_tokens
        model = result.model
    return Embeddings(vectors, tokens, model), len(parts)
