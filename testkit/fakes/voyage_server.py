"""Fake Voyage AI embeddings server (``POST /v1/embeddings``).

Vectors are deterministic: ``vectorizer(text, dim) -> list[float]`` defaults to
:func:`hash_embedding`, a unit-normalised feature-hashing embedding, so identical
texts get identical vectors and texts that share words are cosine-similar.

With ``encoding_format="base64"`` (what ``voyageai`` 0.5 sends by default) each
embedding is base64 of packed little-endian values: float32 for ``output_dtype``
None/"float", int8 for "int8"/"binary", uint8 for "uint8"/"ubinary" -- exactly
what ``voyageai.util.decode_base64_embedding`` decodes with ``np.frombuffer``.

Standalone: ``python -m testkit.fakes.voyage_server --port 0 --latency-ms 50 --port-file /tmp/x``.
"""

from __future__ import annotations

import argparse
import base64
import functools
import re
import struct
from collections.abc import Callable, Collection, Sequence
from typing import Any

from eros.providers.offline.hashing import hash_embedding as offline_hash_embedding
from testkit.fakes.http_base import FakeHTTPServer, RecordedRequest, Response, serve_main

__all__ = ["FakeVoyageServer", "Vectorizer", "hash_embedding", "quantize"]

Vectorizer = Callable[[str, int], list[float]]

DEFAULT_DIM = 512
MAX_BATCH = 1000
CONTEXT_TOKENS = 32_000
_INPUT_TYPES = (None, "query", "document")
_DTYPES = (None, "float", "int8", "uint8", "binary", "ubinary")
_PACK_CODE = {"float": "f", "int8": "b", "binary": "b", "uint8": "B", "ubinary": "B"}


@functools.lru_cache(maxsize=16_384)
def _hash_embedding(text: str, dim: int) -> tuple[float, ...]:
    return tuple(offline_hash_embedding(text, dim))


def hash_embedding(text: str, dim: int) -> list[float]:
    """The offline provider's feature hashing (cached): the fake and the offline embedder put
    texts in one vector space."""
    return list(_hash_embedding(text, dim))


def quantize(vec: Sequence[float], dtype: str) -> list[float] | list[int]:
    """Convert a float vector to the values Voyage returns for ``output_dtype``."""
    if dtype == "float":
        return list(struct.unpack(f"<{len(vec)}f", struct.pack(f"<{len(vec)}f", *vec)))
    if dtype == "int8":
        return [max(-128, min(127, round(x * 127))) for x in vec]
    if dtype == "uint8":
        return [max(0, min(255, round(x * 127) + 128)) for x in vec]
    packed: list[int] = []  # binary / ubinary: sign bits, 8 per byte, MSB first
    for start in range(0, len(vec), 8):
        byte = 0
        for x in vec[start : start + 8]:
            byte = (byte << 1) | (1 if x > 0 else 0)
        packed.append(byte - 128 if dtype == "binary" else byte)
    return packed


def _encode(values: Sequence[float] | Sequence[int], dtype: str) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}{_PACK_CODE[dtype]}", *values)).decode()


class FakeVoyageServer(FakeHTTPServer):
    """Voyage embeddings fake. Set ``wrong_dim`` to return vectors of the wrong size."""

    api_paths = ("/v1/embeddings", "/embeddings")

    def __init__(
        self,
        vectorizer: Vectorizer | None = None,
        *,
        default_dim: int = DEFAULT_DIM,
        allowed_dimensions: Collection[int] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(host=host, port=port, latency=latency, seed=seed)
        self.vectorizer: Vectorizer = vectorizer or hash_embedding
        self.default_dim = default_dim
        self.allowed_dimensions = None if allowed_dimensions is None else set(allowed_dimensions)
        self.wrong_dim: int | None = None

    def configure(self, cfg: dict[str, Any]) -> None:
        super().configure(cfg)
        if "wrong_dim" in cfg:
            self.wrong_dim = None if cfg["wrong_dim"] is None else int(cfg["wrong_dim"])

    def reset(self) -> None:
        super().reset()
        self.wrong_dim = None

    def error_body(self, status: int, message: str) -> Any:
        return {"detail": message}

    def _validate(self, body: dict[str, Any]) -> str | None:
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return "'input' must be a string or a non-empty list of strings"
        if len(texts) > MAX_BATCH:
            return f"The batch size limit is {MAX_BATCH}. Your batch size is {len(texts)}."
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "'model' is required"
        input_type = body.get("input_type")
        if input_type not in _INPUT_TYPES:
            return f"Value '{input_type}' supplied for argument 'input_type' is not valid"
        if body.get("truncation") not in (None, True, False):
            return "'truncation' must be a boolean"
        dim = body.get("output_dimension")
        if dim is not None:
            if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
                return "'output_dimension' must be a positive integer"
            if self.allowed_dimensions is not None and dim not in self.allowed_dimensions:
                return f"output_dimension {dim} is not supported"
        dtype = body.get("output_dtype")
        if dtype not in _DTYPES:
            return f"Value '{dtype}' supplied for argument 'output_dtype' is not valid"
        if dtype in ("binary", "ubinary") and (dim or self.default_dim) % 8:
            return "output_dimension must be a multiple of 8 for binary output"
        if body.get("encoding_format") not in (None, "base64"):
            return "'encoding_format' must be null or 'base64'"
        if body.get("truncation") is False:
            for i, text in enumerate(texts):
                if len(text) // 4 > CONTEXT_TOKENS:
                    return f"Input {i} exceeds the context length and truncation is disabled"
        return None

    def handle(self, req: RecordedRequest) -> Response | None:
        auth = req.headers.get("authorization", "")
        if not re.match(r"^Bearer\s+\S+", auth):
            return self._error(401, "Provided API key is invalid.")
        body: dict[str, Any] = req.body
        problem = self._validate(body)
        if problem is not None:
            return self._error(400, problem)
        texts: list[str] = [body["input"]] if isinstance(body["input"], str) else body["input"]
        dim = body.get("output_dimension") or self.default_dim
        if self.wrong_dim is not None:
            dim = self.wrong_dim
        dtype = body.get("output_dtype") or "float"
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            values = quantize(self.vectorizer(text, dim), dtype)
            embedding: Any = _encode(values, dtype) if as_base64 else values
            data.append({"object": "embedding", "embedding": embedding, "index": index})
        total_tokens = sum(max(1, len(text) // 4) for text in texts)
        payload = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"total_tokens": total_tokens},
        }
        return Response.of_json(200, payload, {"x-request-id": f"req_fake_{self.next_id()}"})


def main(argv: Sequence[str] | None = None) -> int:
    def add_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--dim", type=int, default=DEFAULT_DIM, help="default output dimension")

    def factory(args: argparse.Namespace) -> FakeHTTPServer:
        return FakeVoyageServer(
            default_dim=args.dim,
            host=args.host,
            port=args.port,
            latency=args.latency_ms / 1000.0,
            seed=args.seed,
        )

    return serve_main("fake-voyage-server", factory, argv, add_args)


if __name__ == "__main__":
    raise SystemExit(main())
