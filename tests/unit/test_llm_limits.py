"""The chat client keeps a green pool's connections alive (issue 34).

The openai SDK keeps 100 idle keep-alive connections by default; a gevent worker runs 128 or
more calls at once, so past 100 every reply's connection was closed and the next call opened
a new one (a DNS lookup and a TCP, in production TLS, handshake)."""

from __future__ import annotations

import openai

from eros.providers import llm


def test_the_chat_client_keeps_more_idle_connections_than_a_green_pool_runs_calls() -> None:
    limits = llm._limits()
    assert type(limits) is type(openai.DEFAULT_CONNECTION_LIMITS)
    assert limits.max_keepalive_connections == llm.KEEPALIVE_CONNECTIONS >= 256
    assert (limits.max_connections or 0) >= llm.KEEPALIVE_CONNECTIONS
    assert limits.keepalive_expiry == openai.DEFAULT_CONNECTION_LIMITS.keepalive_expiry
