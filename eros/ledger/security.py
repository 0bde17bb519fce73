"""Who may look: one token, a signed session cookie, CSRF tokens and
the headers every response carries.

- The token is EROS_LEDGER_TOKEN, or a random one printed once as a login URL. A browser
  trades it for a session cookie (HttpOnly, SameSite=Strict, signed with a key derived from
  the token: a new token ends every session); a script sends ``Authorization: Bearer``.
- Every POST made with the cookie carries a CSRF token bound to that session (a form field or
  the ``X-CSRF-Token`` header); a Bearer request has no ambient credential to abuse and needs
  none. A POST whose ``Origin`` is another site is refused either way.
- Every response: a Content-Security-Policy that allows no script at all (the pages have none)
  and no framing, ``X-Frame-Options: DENY``, ``Cache-Control: no-store``, no referrer
  to other sites (``same-origin``: with ``no-referrer`` a browser sends ``Origin: null``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

#: the session cookie, and the pre-login cookie that guards the login form
SESSION_COOKIE = "eros_ledger_session"
LOGIN_COOKIE = "eros_ledger_login"
#: how long a session lasts (seconds)
SESSION_SECS = 12 * 3600
#: a configured token shorter than this is refused (the random one is 43 characters)
MIN_TOKEN_CHARS = 16

CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def _sign(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Keys:
    """The token and the signing key derived from it."""

    token: str
    key: bytes

    @classmethod
    def from_token(cls, token: str) -> Keys:
        return cls(token, hashlib.sha256(b"eros-ledger-session\x00" + token.encode()).digest())

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def bearer_ok(self, header: str | None) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        return self.token_ok(header[len("Bearer "):].strip())

    # --- sessions -------------------------------------------------------------------------
    def new_session(self, now: float | None = None) -> str:
        body = f"{int(now if now is not None else time.time())}.{secrets.token_urlsafe(16)}"
        return f"{body}.{_sign(self.key, 'session.' + body)}"

    def session_ok(self, cookie: str | None, now: float | None = None) -> bool:
        parts = (cookie or "").split(".")
        if len(parts) != 3 or not parts[0].isdigit():
            return False
        body = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(parts[2], _sign(self.key, "session." + body)):
            return False
        age = (now if now is not None else time.time()) - int(parts[0])
        return 0 <= age < SESSION_SECS

    # --- CSRF -----------------------------------------------------------------------------
    def csrf_for(self, session: str) -> str:
        """The CSRF token of a session (of the pre-login cookie, for the login form)."""
        return _sign(self.key, "csrf." + session)

    def csrf_ok(self, session: str | None, given: str | None) -> bool:
        return bool(session) and given is not None and hmac.compare_digest(
            given.encode(), self.csrf_for(session or "").encode())


def safe_next(path: str | None) -> str:
    """Where to go after logging in: a path of this site only (never ``//host`` or a URL)."""
    if not path or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost`` and the rest of 127.0.0.0/8."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
