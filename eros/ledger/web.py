"""What the ledger's handlers share: the :class:`Context`, rendering a template (with the
session's CSRF token for its forms), error pages, and the CSRF check of a POST."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy import Engine
from starlette.requests import Request
from starlette.responses import HTMLResponse

from eros.ledger.security import SESSION_COOKIE, Keys
from eros.providers.base import Embedder
from eros.settings import Settings

HERE = Path(__file__).parent


@dataclass
class Context:
    """What every handler needs."""

    engine: Engine
    settings: Settings
    embedder: Embedder
    keys: Keys
    #: the broker's URL (masked), whether embedded and reachable (eros status)
    broker_info: Callable[[], dict[str, Any]]
    db_embedded: bool = False
    #: mark cookies Secure (served over HTTPS through a proxy)
    secure_cookies: bool = False


def ctx(request: Request) -> Context:
    c: Context = request.app.state.ledger
    return c


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    from eros.ledger.timeline import svg

    env.globals["timeline_svg"] = svg
    return env


TEMPLATES = _env()


def render(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A page from ``templates/NAME`` with the session's CSRF token for its forms."""
    session = request.cookies.get(SESSION_COOKIE)
    csrf = ctx(request).keys.csrf_for(session) if session else ""
    html = TEMPLATES.get_template(name).render(csrf=csrf, path=request.url.path, **values)
    return HTMLResponse(html, status_code=status)


def error(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", status=status, status_code=status, message=message)


async def require_csrf(request: Request) -> dict[str, str] | None:
    """The POSTed form when the request may act: Bearer, or a cookie session whose CSRF
    token came with it (form field ``csrf`` or header ``X-CSRF-Token``); None otherwise."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    if getattr(request.state, "auth", None) == "bearer":
        return fields
    given = fields.get("csrf") or request.headers.get("x-csrf-token")
    if ctx(request).keys.csrf_ok(request.cookies.get(SESSION_COOKIE), given):
        return fields
    return None


