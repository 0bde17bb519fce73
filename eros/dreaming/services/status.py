"""The pipeline's status, one report for ``eros status`` and the ledger's status page:
backlog, work in flight, outcomes, dead letters, recent errors, totals, the
guard's state, providers and cost — ids, counts and codes, never text.

The broker's reachability is looked at by the caller (the CLI knows whether an embedded Redis
is in use) and passed in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, text

from eros.settings import Settings

QUARANTINED = text(
    "SELECT count(*) FROM engine.companion_memories WHERE status = 'quarantined'")


def mask(url: str) -> str:
    """The URL with its password masked, readable (``?host=/tmp/x``, not ``%2Ftmp%2Fx``)."""
    from urllib.parse import unquote

    from eros.db.engine import safe_url

    return unquote(safe_url(url))


def providers_info(settings: Settings) -> dict[str, Any]:
    """Which providers a worker with these settings uses — names and models, never keys."""
    from eros.core.text import mask_url
    from eros.providers.offline import offline_embedder_name
    from eros.providers.offline.heuristic import HEURISTIC_MODEL

    def public(url: str | None) -> str | None:
        return mask_url(url) if url else None

    llm: dict[str, Any] = ({"offline": True, "name": HEURISTIC_MODEL, "model": None,
                            "base_url": None} if settings.llm_is_offline else
                           {"offline": False, "name": "openai-compatible",
                            "model": settings.dreaming_model,
                            "base_url": public(settings.openrouter_base_url)})
    offline_name = offline_embedder_name(settings.embedding_dim, settings.eros_offline_embedder)
    embedder: dict[str, Any] = ({"offline": True, "name": offline_name, "model": None,
                                 "dim": settings.embedding_dim, "base_url": None}
                                if settings.embedder_is_offline else
                                {"offline": False, "name": "voyage",
                                 "model": settings.embedding_model,
                                 "dim": settings.embedding_dim,
                                 "base_url": public(settings.voyage_base_url)})
    return {"mode": settings.eros_providers, "llm": llm, "embedder": embedder}


def status_report(engine: Engine, settings: Settings, *, db_embedded: bool,
                  broker: dict[str, Any]) -> dict[str, Any]:
    """Everything ``eros status --json`` prints (its keys are documented there)."""
    from eros.guard.services.guard_layer import layer_report
    from eros.memory.db import queries, rejected_sql

    s = settings
    with engine.connect() as conn:
        counts = queries.session_counts(conn, idle_secs=s.dreaming_idle_secs,
                                        stale_secs=s.dreaming_claim_stale_secs)
        outcomes = queries.outcome_counts(conn)
        dead = queries.dead_letters(conn)
        errors = queries.recent_errors(conn)
        memories = queries.memory_counts(conn)
        cost = queries.cost_report(conn)
        quarantined = int(conn.execute(QUARANTINED).scalar_one())
        rejected = {"count": rejected_sql.count(conn), "tasks": rejected_sql.recent(conn)}
        layer = layer_report(s, conn)
    return {
        "backlog": {k: counts[k] for k in ("eligible", "claimable", "oldest_idle_secs",
                                           "waiting_retry", "not_idle_yet")},
        "in_flight": {"claimed": counts["in_flight"], "stale_claims": counts["stale_claims"]},
        "outcomes": outcomes,
        "dead_letters": {"count": counts["dead_letters"], "sessions": dead},
        "recent_errors": errors,
        "rejected_tasks": rejected,
        "totals": {"sessions": counts["sessions"], "classified": counts["classified"],
                   "users": counts["users"], "memories": memories["total"],
                   "memories_current": memories["current"]},
        "guard": {"quarantined": quarantined, "classifier": s.memory_guard_classifier,
                  "llm": s.memory_guard_llm, "max_chars": s.memory_guard_max_chars,
                  **layer},
        "providers": providers_info(s),
        "services": {
            "database": {"url": mask(s.require_database_url()), "embedded": db_embedded},
            "broker": broker,
        },
        "settings": {"idle_secs": s.dreaming_idle_secs, "tick_secs": s.dreaming_tick_secs,
                     "claim_stale_secs": s.dreaming_claim_stale_secs,
                     "batch": s.dreaming_batch, "max_attempts": s.dreaming_max_attempts},
        "cost": cost,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
