"""A prefork child never shares the parent's embedding connection (issue 30, cold fleet).

voyageai keeps its ``requests`` session in a per-thread cache that a forked child inherits: a
worker that trained the guard's model before forking left every child on one keep-alive TCP
connection, and a child's request could wait for a reply another process read (30 s stalls in
bench/guard_ready_bench.py). The worker's after-fork hook drops it."""

from __future__ import annotations

import os

from voyageai.api_resources import api_requestor

from eros.lifecycle import _after_fork
from eros.providers.embeddings import VoyageEmbedder
from eros.settings import load_settings
from testkit.fakes.voyage_server import FakeVoyageServer


def _connection_ports(session: object) -> set[int]:
    ports = set()
    for pool in session.adapters["http://"].poolmanager.pools._container.values():  # type: ignore[attr-defined]
        while not pool.pool.empty():
            conn = pool.pool.get_nowait()
            if conn is not None and conn.sock is not None:
                ports.add(conn.sock.getsockname()[1])
            pool.pool.put_nowait(conn)
            break
    return ports


def test_a_forked_worker_process_opens_its_own_embedding_connection(
        voyage: FakeVoyageServer) -> None:
    settings = load_settings(voyage_api_key="k", voyage_base_url=voyage.url,
                             embedding_model="voyage-3.5-lite", embedding_dim=512,
                             provider_max_retries=0)
    embedder = VoyageEmbedder(settings)
    embedder.embed(["the parent's call, as the guard's training makes before the fork"],
                   input_type="document")
    parent_session = api_requestor._thread_context.session
    parent_ports = _connection_ports(parent_session)
    assert parent_ports  # a pooled keep-alive connection the child would inherit
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: what a prefork pool process runs first
        code = 1
        try:
            _after_fork()
            VoyageEmbedder(settings).embed(["the child's call"], input_type="document")
            child_session = api_requestor._thread_context.session
            child_ports = _connection_ports(child_session)
            code = 0 if child_session is not parent_session and child_ports and \
                not child_ports & parent_ports else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(0)
    os.close(write)
    outcome = os.read(read, 1)
    os.waitpid(pid, 0)
    assert outcome == bytes([0])
