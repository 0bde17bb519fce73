"""Embeddings through the ``voyageai`` SDK: all of a session's texts in one request."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Sequence

import requests
import requests.adapters
import voyageai
import voyageai.error as verr
from voyageai.client import Client

from eros.core.green import green_process
from eros.core.text import safe_error_code
from eros.errors import PermanentError, TransientError
from eros.providers.base import Embeddings, InputType
from eros.providers.retry_after import parse_retry_after
from eros.settings import Settings

#: the same statuses the LLM side retries (timeouts, conflicts, too early, rate limits)
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT = (verr.RateLimitError, verr.ServerError, verr.ServiceUnavailableError,
              verr.Timeout, verr.APIConnectionError, verr.TryAgain)


class VoyageEmbedder:
    """``Embedder`` over voyageai; vectors of the wrong size are a PermanentError."""

    offline = False

    def __init__(self, settings: Settings) -> None:
        self.name = settings.embedding_model
        self._dim = settings.embedding_dim
        _direct_sessions()
        # voyageai counts attempts, not retries: max_retries=1 means one try.
        self._client = Client(
            api_key=settings.voyage_api_key,
            base_url=settings.voyage_base_url,
            timeout=settings.embedding_timeout_secs,
            max_retries=settings.provider_max_retries + 1,
        )

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        if not texts:
            return Embeddings([], 0, self.name)
        try:
            result = self._client.embed(list(texts), model=self.name, input_type=input_type,
                                        output_dimension=self._dim)
        except verr.VoyageError as err:
            raise translate_voyage_error(err) from None
        except OSError as err:  # sockets below the SDK
            raise TransientError(f"embedding connection error ({type(err).__name__})",
                                 provider="embedding") from None
        vectors = [list(map(float, v)) for v in result.embeddings]
        check_vectors(vectors, len(texts), self._dim)
        return Embeddings(vectors, int(result.total_tokens or 0), self.name)


#: keep-alive connections a gevent worker's shared session keeps to the embedding API (above
#: the green pool's usual concurrency of 64-256 in flight, and each costs only a socket).
GREEN_HTTP_POOL = 256

#: the CA bundle ``requests`` takes from the environment when ``trust_env`` is on.
_CA_BUNDLE_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def _direct_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    bundle = next((os.environ[v] for v in _CA_BUNDLE_VARS if os.environ.get(v)), None)
    if bundle:
        session.verify = bundle
    return session


def _green_session() -> requests.Session:
    """One session for every greenlet of a gevent worker, its pool as large as a worker's
    concurrency can use (connections past it are opened and dropped, never waited for)."""
    session = _direct_session()
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=GREEN_HTTP_POOL)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def _direct_sessions() -> None:
    """voyageai's per-thread ``requests`` sessions without ``trust_env`` when no proxy is
    configured: with it, every request scans the whole environment for ``*_proxy`` variables
    (about 6% of an embedding call's CPU). The CA bundle the environment names is
    set on the session, as ``trust_env`` would have applied it; with a proxy configured the
    SDK's default session is kept, so the proxy (and its ``no_proxy``) still applies.

    On a gevent worker the SDK's per-thread session is per-greenlet, and the pool spawns a
    greenlet per task: every embedding call made a new session, a DNS lookup and a new TCP
    (and TLS) connection. There one session is shared by all; its connection pool
    is thread-safe, and the process is one OS thread."""
    if voyageai.requestssession is not None or voyageai.proxy is not None \
            or urllib.request.getproxies():
        return
    voyageai.requestssession = _green_session() if green_process() else _direct_session


def forget_inherited_sessions() -> None:
    """Drop the ``requests`` session voyageai keeps per thread, in a process just forked.

    The SDK caches one session (with its pool of keep-alive connections) in a module-level
    ``threading.local``; a prefork child's main thread inherits the parent's. When the parent
    made a call before forking — a worker training the guard's meaning model at start-up
    — every child held the same TCP connection: one child's request read another's
    reply or waited for it until the embedding timeout (30 s stalls and a retry, measured by
    bench/guard_ready_bench.py). Each process now opens its own."""
    from voyageai.api_resources import api_requestor

    vars(api_requestor._thread_context).pop("session", None)
    if isinstance(voyageai.requestssession, requests.Session):  # a green process's shared one
        voyageai.requestssession = _green_session()


def check_vectors(vectors: list[list[float]], expected: int, dim: int) -> None:
    """A count or size mismatch would corrupt recall: fail instead of inserting."""
    if len(vectors) != expected:
        raise PermanentError(f"embedding returned {len(vectors)} vectors for {expected} texts",
                             provider="embedding")
    for vector in vectors:
        if len(vector) != dim:
            raise PermanentError(f"embedding has {len(vector)} dimensions, EMBEDDING_DIM is {dim}",
                                 provider="embedding")


def translate_voyage_error(err: verr.VoyageError) -> TransientError | PermanentError:
    """The SDK's error class, the status and a code-shaped error code: never the body, which
    may echo the texts sent."""
    status = err.http_status
    code = safe_error_code(err.code)
    message = f"embedding {type(err).__name__}" + (f" HTTP {status}" if status else "") + \
        (f" ({code})" if code else "")
    if isinstance(err, _TRANSIENT) or (status is not None and (status >= 500 or status in
                                                               _TRANSIENT_STATUS)):
        headers = err.headers or {}
        retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
        return TransientError(message, provider="embedding", status=status,
                              retry_after=retry_after)
    return PermanentError(message, provider="embedding", status=status)
