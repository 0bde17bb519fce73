"""On a gevent worker every task shares one embedding session (issue 34).

voyageai caches its ``requests`` session per thread; gevent makes that per greenlet, and the
gevent pool runs each task in a new greenlet, so every embedding call used to open a session,
resolve the host and connect afresh. Threads stand in for greenlets here (each has its own
``threading.local``, as each greenlet has in a patched process)."""

from __future__ import annotations

import sys
import threading
import types

import pytest
import requests
import voyageai
from voyageai.api_resources import api_requestor

from eros.providers import embeddings
from eros.providers.embeddings import GREEN_HTTP_POOL, VoyageEmbedder
from eros.settings import load_settings
from testkit.fakes.voyage_server import FakeVoyageServer
from tests.integration.test_embedder_fork import _connection_ports


def _embed_in_thread(embedder: VoyageEmbedder) -> object:
    seen: list[object] = []

    def run() -> None:
        embedder.embed(["a task's call"], input_type="document")
        seen.append(api_requestor._thread_context.session)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    return seen[0]


@pytest.fixture
def green(monkeypatch: pytest.MonkeyPatch) -> None:
    patched = types.SimpleNamespace(is_module_patched=lambda name: name == "socket")
    monkeypatch.setitem(sys.modules, "gevent.monkey", patched)
    monkeypatch.setattr(voyageai, "requestssession", None)


def _embedder(voyage: FakeVoyageServer) -> VoyageEmbedder:
    return VoyageEmbedder(load_settings(
        voyage_api_key="k", voyage_base_url=voyage.url, embedding_model="voyage-3.5-lite",
        embedding_dim=512, provider_max_retries=0))


def test_every_greenlet_of_a_gevent_worker_shares_one_session_and_connection(
        green: None, voyage: FakeVoyageServer) -> None:
    embedder = _embedder(voyage)
    first, second = _embed_in_thread(embedder), _embed_in_thread(embedder)
    assert isinstance(first, requests.Session) and first is second
    assert first.trust_env is False
    assert first.adapters["http://"]._pool_maxsize == GREEN_HTTP_POOL  # type: ignore[attr-defined]
    assert len(_connection_ports(first)) == 1  # the second call reused the first's connection


def test_a_process_forked_from_a_green_one_gets_its_own_session(
        green: None, voyage: FakeVoyageServer) -> None:
    _embed_in_thread(_embedder(voyage))
    shared = voyageai.requestssession
    embeddings.forget_inherited_sessions()
    assert isinstance(voyageai.requestssession, requests.Session)
    assert voyageai.requestssession is not shared


def test_threads_of_a_process_without_gevent_keep_their_own_sessions(
        monkeypatch: pytest.MonkeyPatch, voyage: FakeVoyageServer) -> None:
    monkeypatch.setattr(voyageai, "requestssession", None)
    embedder = _embedder(voyage)
    assert _embed_in_thread(embedder) is not _embed_in_thread(embedder)
