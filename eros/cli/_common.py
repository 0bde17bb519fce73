"""What the commands share: services (configured or embedded), start-up checks that name the
URL that failed and how to fix it, and a plain-text table that lines up CJK text."""

from __future__ import annotations

import contextlib
import logging
import os
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eros.dreaming.services.status import mask as mask  # re-exported
from eros.dreaming.services.status import providers_info as providers_info  # re-exported
from eros.errors import ServiceUnavailable
from eros.settings import Settings, load_settings

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from eros.devstack.embedded import Services

log = logging.getLogger("eros.cli")

#: how to get a working database when the configured one fails.
DB_HINT = "unset DATABASE_URL to use the embedded PostgreSQL, or start the server it names"
BROKER_HINT = "unset REDIS_URL to use the embedded Redis, or start the server it names"


@dataclass(frozen=True)
class Runtime:
    """A command's settings (with any embedded URLs filled in), engine and services."""

    settings: Settings
    engine: Engine
    services: Services


def check_db(engine: Engine, settings: Settings, *, embedded: bool = False) -> None:
    """Connect once and check the schema, with an error that says what to do."""
    from sqlalchemy.exc import OperationalError

    from eros.db.engine import check_database

    try:
        with engine.connect():
            pass
    except OperationalError as err:
        first = str(err.orig).strip().splitlines()[0] if err.orig else str(err)
        where = "the embedded PostgreSQL" if embedded else "DATABASE_URL"
        hint = "run `eros --debug status` for details" if embedded else DB_HINT
        raise ServiceUnavailable(f"cannot connect to {where} ({mask(str(engine.url))}): "
                                 f"{first}; {hint}") from None
    check_database(engine, settings)


def check_brokers(settings: Settings, *, embedded: bool = False) -> None:
    """REDIS_URL (results, rate limits, beat's heartbeat) and, when set, BROKER_URL."""
    check_broker(settings.require_redis_url(), embedded=embedded)
    if settings.broker_url:
        check_broker(settings.broker_url, variable="BROKER_URL")


def check_broker(url: str, *, embedded: bool = False, timeout: float = 5.0,
                 variable: str = "REDIS_URL") -> None:
    """Fail now, naming the variable, rather than let Celery retry a dead broker forever."""
    from kombu.connection import Connection

    where = "the embedded Redis" if embedded else variable
    hint = BROKER_HINT if variable == "REDIS_URL" else (
        f"start the server it names, or unset {variable} to use REDIS_URL as the broker")
    try:
        with Connection(url, connect_timeout=timeout) as conn:  # type: ignore[no-untyped-call]
            conn.ensure_connection(max_retries=1, timeout=timeout)
    except Exception as err:  # kombu raises OperationalError, socket errors, redis errors
        raise ServiceUnavailable(f"cannot connect to {where} ({mask(url)}): "
                                 f"{str(err).strip() or type(err).__name__}; "
                                 f"{hint}") from None


@contextlib.contextmanager
def runtime(*, need_broker: bool = False, check: bool = True) -> Iterator[Runtime]:
    """Settings from the environment, embedded servers for unset URLs, a checked engine;
    everything this command started is stopped when the block ends."""
    from eros.db.engine import make_engine
    from eros.devstack.embedded import EmbeddedStack

    settings = load_settings()
    stack = EmbeddedStack(settings.database_url, settings.redis_url, need_db=True,
                          need_broker=need_broker)
    try:
        services = stack.start()
        settings = load_settings(database_url=services.database_url,
                                 redis_url=services.redis_url)
        engine = make_engine(settings.require_database_url(), pool_size=2, settings=settings)
        try:
            if check:
                check_db(engine, settings, embedded=services.db_embedded)
            if need_broker:
                check_brokers(settings, embedded=services.redis_embedded)
            yield Runtime(settings, engine, services)
        finally:
            engine.dispose()
    finally:
        stack.stop()


def export_services(settings: Settings) -> None:
    """Make this process's own ``eros.worker`` import see the resolved URLs."""
    from eros.settings import get_settings

    if settings.database_url:
        os.environ["DATABASE_URL"] = settings.database_url
    if settings.redis_url:
        os.environ["REDIS_URL"] = settings.redis_url
    get_settings.cache_clear()


def describe_providers(info: dict[str, Any]) -> str:
    llm, emb = info["llm"], info["embedder"]
    left = "offline heuristic extractor" if llm["offline"] else \
        f"{llm['model']} at {llm['base_url']}"
    right = f"offline {emb['name']} embedder ({emb['dim']} dims)" if emb["offline"] else \
        f"{emb['model']} ({emb['dim']} dims)"
    return f"LLM: {left}; embeddings: {right}"


# --- tables ---------------------------------------------------------------------------------
def width(text: str) -> int:
    """Terminal columns: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def clip(text: str, columns: int) -> str:
    """One line of at most ``columns`` terminal columns, with an ellipsis if cut."""
    text = " ".join(text.splitlines())
    if width(text) <= columns:
        return text
    out, used = [], 0
    for ch in text:
        w = width(ch)
        if used + w > columns - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns; the last column is not padded (it is usually free text)."""
    widths = [width(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], width(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [c + " " * (widths[i] - width(c)) if i < len(cells) - 1 else c
                  for i, c in enumerate(cells)]
        return "  ".join(padded).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]),
                      *(line(r) for r in rows)])


def terminal_columns() -> int:
    import shutil

    return max(60, shutil.get_terminal_size((120, 24)).columns)

