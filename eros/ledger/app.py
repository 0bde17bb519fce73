"""The ledger's web application: the routes, the guard in front of all of them, logging in.

:func:`create_app` builds a Starlette app around one :class:`Context` (engine, settings,
embedder, token). Every request but the login page's passes :class:`Guard` first: a valid
session cookie or Bearer token, or a redirect to the login page (pages) or 401 (everything
else: static files, JSON, POSTs). Templates autoescape everything they print.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from eros.ledger.security import (
    HEADERS,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    SESSION_SECS,
    safe_next,
)
from eros.ledger.web import HERE, Context, ctx, error, render, require_csrf

log = logging.getLogger("eros.ledger")


# --- the guard ------------------------------------------------------------------------------
OPEN_PATHS = {"/login"}


def authenticated(request: Request) -> str | None:
    """``bearer``, ``cookie``, or None."""
    keys = ctx(request).keys
    if keys.bearer_ok(request.headers.get("authorization")):
        return "bearer"
    if keys.session_ok(request.cookies.get(SESSION_COOKIE)):
        return "cookie"
    return None


def _cross_site(request: Request) -> bool:
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin == "null"
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] != host


class Guard(BaseHTTPMiddleware):
    """Authentication before any route, security headers after; one log line per request
    with the method, the route's path (no query string: a recall query is user text) and
    the status."""

    async def dispatch(self, request: Request,
                       call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        response = await self._dispatch(request, call_next)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        log.info("%s %s %d %.0f ms", request.method, request.url.path, response.status_code,
                 (time.perf_counter() - started) * 1000)
        return response

    async def _dispatch(self, request: Request,
                        call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.method == "POST" and _cross_site(request):
            return PlainTextResponse("cross-site request refused", status_code=403)
        if request.url.path in OPEN_PATHS:
            return await call_next(request)
        how = authenticated(request)
        if how is None:
            wants_page = (request.method in ("GET", "HEAD")
                          and not request.url.path.startswith(("/static/", "/api/")))
            if wants_page:
                return RedirectResponse("/login?next=" + _quote(request.url.path),
                                        status_code=303)
            return PlainTextResponse("authentication required", status_code=401,
                                     headers={"WWW-Authenticate": 'Bearer realm="eros ledger"'})
        request.state.auth = how
        return await call_next(request)


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")


# --- logging in -----------------------------------------------------------------------------
def _login_form(request: Request, status: int = 200, message: str = "",
                nxt: str | None = None) -> Response:
    import secrets

    nonce = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(16)
    response = render(request, "login.html", status=status, message=message,
                      login_csrf=ctx(request).keys.csrf_for("login." + nonce),
                      next=safe_next(nxt or request.query_params.get("next")))
    response.set_cookie(LOGIN_COOKIE, nonce, max_age=3600, httponly=True, samesite="strict",
                        secure=ctx(request).secure_cookies, path="/login")
    return response


def _logged_in(request: Request, to: str) -> Response:
    c = ctx(request)
    response = RedirectResponse(safe_next(to), status_code=303)
    response.set_cookie(SESSION_COOKIE, c.keys.new_session(), max_age=SESSION_SECS,
                        httponly=True, samesite="strict", secure=c.secure_cookies, path="/")
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


async def login(request: Request) -> Response:
    keys = ctx(request).keys
    if request.method == "GET":
        token = request.query_params.get("token")
        if token is None:
            return _login_form(request)
        if keys.token_ok(token):  # the login URL printed at start-up
            return _logged_in(request, request.query_params.get("next") or "/")
        return _login_form(request, 401, "That token is not right.")
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    nonce = request.cookies.get(LOGIN_COOKIE)
    if not nonce or not keys.csrf_ok("login." + nonce, form.get("csrf")):
        return _login_form(request, 403, "The form expired; try again.", form.get("next"))
    if not keys.token_ok(form.get("token")):
        return _login_form(request, 401, "That token is not right.", form.get("next"))
    return _logged_in(request, form.get("next") or "/")


async def logout(request: Request) -> Response:
    if await require_csrf(request) is None:
        return error(request, 403, "The form's CSRF token is missing or wrong.")
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def create_app(context: Context) -> Starlette:
    """The ledger application around ``context``."""
    from eros.ledger import actions, pages

    uid, mid = "{user_id:uuid}", "{memory_id:uuid}"
    routes = [
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", pages.users),
        Route("/users", pages.users),
        Route(f"/users/{uid}", pages.user),
        Route(f"/users/{uid}/recall", pages.recall),
        Route(f"/memories/{mid}", pages.memory),
        Route("/status", pages.status),
        Route("/api/status", pages.status_json),
        Route(f"/api/users/{uid}/recall", pages.recall_json),
        Route(f"/memories/{mid}/forget", actions.forget_memory, methods=["GET", "POST"]),
        Route(f"/memories/{mid}/restore", actions.restore, methods=["GET", "POST"]),
        Route("/messages/{message_id:uuid}/forget", actions.forget_message,
              methods=["GET", "POST"]),
        Route(f"/users/{uid}/forget", actions.forget_user, methods=["GET", "POST"]),
        Route(f"/users/{uid}/export", actions.export, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(Guard)])
    app.state.ledger = context
    return app
