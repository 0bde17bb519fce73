"""Serving the ledger: the bind check, the token, uvicorn — with no access log of its own (a
recall query in a URL is user text; :class:`eros.ledger.app.Guard` logs paths only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from eros.errors import ErosError
from eros.ledger.security import Keys, is_loopback, new_token
from eros.providers.base import Embedder
from eros.settings import Settings


def check_bind(host: str, token: str | None) -> None:
    """A non-loopback address only with a configured token: a random token printed on one
    terminal is not a way to guard a page the network can reach."""
    if not is_loopback(host) and not token:
        raise ErosError(f"refusing to bind {host}: set EROS_LEDGER_TOKEN (at least 16 "
                        "characters) to serve the ledger beyond this machine, or bind "
                        "127.0.0.1 and put a reverse proxy with TLS in front (eros ledger --help)")


def login_url(host: str, port: int, token: str) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/login?token={token}"


def serve(engine: Engine, settings: Settings, embedder: Embedder, *, host: str, port: int,
          broker_info: Callable[[], dict[str, Any]], db_embedded: bool,
          secure_cookies: bool, announce: Callable[[str], None]) -> None:
    """Run until interrupted. ``announce`` shows the login URL (once, when the token is a
    random one) or where the ledger listens."""
    import uvicorn

    from eros.ledger.app import create_app
    from eros.ledger.web import Context

    token = settings.eros_ledger_token
    check_bind(host, token)
    keys = Keys.from_token(token or new_token())
    app = create_app(Context(engine, settings, embedder, keys, broker_info,
                             db_embedded=db_embedded, secure_cookies=secure_cookies))
    if token:
        announce(f"eros ledger on http://{host}:{port}/ (log in with EROS_LEDGER_TOKEN)")
    else:
        announce("eros ledger: open this URL to log in (the token is new at every start and "
                 f"shown only here):\n    {login_url(host, port, keys.token)}")
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning",
                server_header=False, proxy_headers=False)
