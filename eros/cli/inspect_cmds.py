"""Looking: ``status`` (the health of the pipeline), ``memories USER`` and ``users``."""

from __future__ import annotations

import json
import uuid
from datetime import UTC
from typing import TYPE_CHECKING, Any

import click

from eros.cli import main

if TYPE_CHECKING:
    from eros.cli._common import Runtime

CATEGORIES = ("fact", "preference", "event", "emotion", "relation")

_STATUS_HELP = """Show the backlog, work in flight, outcomes, dead letters, recent errors and
which providers and services are in use.

\b
--json prints one object with these stable keys:
  backlog       eligible (idle, unclassified, not dead-lettered, not backing off; in-flight
                sessions included), claimable (eligible and not in flight: what the next
                claim takes), oldest_idle_secs (number or null), waiting_retry (backing off
                after an error), not_idle_yet (unclassified, still active)
  in_flight     claimed (claim younger than DREAMING_CLAIM_STALE_SECS), stale_claims
  outcomes      sessions {kind: count} (latest outcome of each session),
                runs_24h {kind: count} (every run in the last 24 hours)
  dead_letters  count, sessions [{session_id, dead_lettered_at, last_error}] (newest 5)
  recent_errors [{session_id, attempt, outcome, error, finished_at}] (newest 5)
  rejected_tasks count, tasks [{task, task_id, error, rejected_at}] (newest 5): messages
                refused for their arguments (engine.rejected_tasks)
  totals        sessions, classified, users, memories, memories_current
  guard         quarantined (memories), classifier, llm, max_chars (MEMORY_GUARD_*);
                meaning_layer (ready | training | unavailable | unusable | off),
                embedding_model, bank, source (package | database | null),
                unscreened_memories, unscreened_turns; with a model: threshold,
                balanced_accuracy; trained into the database: trained_at,
                training_embedding_tokens, training_cost_usd
  providers     mode, llm {offline, name, model, base_url},
                embedder {offline, name, model, dim, base_url}
  services      database {url, embedded}, broker {url, embedded, reachable}
  settings      idle_secs, tick_secs, claim_stale_secs, batch, max_attempts
  cost          daily [{day, sessions, runs, prompt_tokens, completion_tokens,
                embedding_tokens, cost_usd}] (newest 7 days), per_session_usd,
                per_user_month_usd (estimated: average over users active in the last 30
                days of their 30-day cost), active_users_30d, last_30_days_usd
  generated_at  ISO-8601 time of the report
URLs have passwords masked; API keys are never printed.
"""


@main.command(help=_STATUS_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (keys above).")
def status(as_json: bool) -> None:
    from eros.cli._common import runtime

    with runtime() as rt:
        report = _status_report(rt)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        _print_status(report)


def broker_info(rt: Runtime) -> dict[str, Any]:
    """The broker a worker would use; looked at, never started (status must not change it)."""
    from eros.cli._common import mask
    from eros.devstack.embedded import EmbeddedRedis, data_dir

    if rt.settings.broker_url:  # RabbitMQ (BROKER_URL): looked at the same way
        from eros.cli._common import check_broker
        from eros.errors import ServiceUnavailable

        try:
            check_broker(rt.settings.broker_url, timeout=1, variable="BROKER_URL")
            reachable = True
        except ServiceUnavailable:
            reachable = False
        return {"url": mask(rt.settings.broker_url), "embedded": False, "reachable": reachable}
    url, embedded = rt.settings.redis_url, False
    if not url:
        url, embedded = EmbeddedRedis(data_dir()).url, True
    reachable = False
    try:
        import redis

        client = redis.Redis.from_url(url.replace("redis+socket://", "unix://").split("?")[0],
                                      socket_timeout=1, socket_connect_timeout=1)
        try:
            reachable = bool(client.ping())
        finally:
            client.close()
    except Exception:  # unreachable, unparseable, refused: all just "not reachable"
        reachable = False
    return {"url": mask(url), "embedded": embedded, "reachable": reachable}


def _status_report(rt: Runtime) -> dict[str, Any]:
    from eros.dreaming.services.status import status_report

    return status_report(rt.engine, rt.settings, db_embedded=rt.services.db_embedded,
                         broker=broker_info(rt))


def _guard_line(g: dict[str, Any]) -> str:
    line = f"             meaning layer {g['meaning_layer']} ({g['embedding_model']}"
    if g.get("source"):
        line += f", model from the {g['source']}"
    line += (f"); {g['unscreened_memories']} unscreened memories, "
             f"{g.get('unscreened_turns', 0)} unscreened turns")
    if g.get("training_cost_usd") is not None:
        line += (f"; training cost {g['training_embedding_tokens']} embedding tokens, "
                 f"${g['training_cost_usd']:.6f}")
    return line


def _age(secs: float | None) -> str:
    if secs is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs / size:.1f}{unit}"
    return f"{secs:.0f}s"


def _kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _print_status(r: dict[str, Any]) -> None:
    from eros.cli._common import clip, describe_providers, terminal_columns

    cols = terminal_columns()
    b, f, t = r["backlog"], r["in_flight"], r["totals"]
    db, broker = r["services"]["database"], r["services"]["broker"]
    lines = [
        f"backlog      {b['eligible']} eligible ({b['claimable']} claimable), oldest idle "
        f"{_age(b['oldest_idle_secs'])}; {b['waiting_retry']} backing off, "
        f"{b['not_idle_yet']} not idle yet",
        f"in flight    {f['claimed']} claimed, {f['stale_claims']} stale claims",
        f"outcomes     sessions: {_kinds(r['outcomes']['sessions'])}",
        f"             runs (24 h): {_kinds(r['outcomes']['runs_24h'])}",
        f"dead letters {r['dead_letters']['count']}",
    ]
    lines += [clip(f"  {d['session_id']}  {d['last_error'] or ''}", cols)
              for d in r["dead_letters"]["sessions"]]
    lines.append(f"recent errors {len(r['recent_errors'])}")
    lines += [clip(f"  {e['finished_at'][:19]}  {e['session_id']}  {e['outcome']}: "
                   f"{e['error']}", cols) for e in r["recent_errors"]]
    if r["rejected_tasks"]["count"]:
        lines.append(f"refused tasks {r['rejected_tasks']['count']} (invalid arguments)")
        lines += [clip(f"  {x['rejected_at'][:19]}  {x['task']}  {x['error']}", cols)
                  for x in r["rejected_tasks"]["tasks"]]
    g = r["guard"]
    lines += [
        f"guard        {g['quarantined']} quarantined memories (eros rescreen --restore ID); "
        f"classifier {g['classifier']}, LLM second opinion {g['llm']}",
        _guard_line(g),
        f"totals       {t['sessions']} sessions ({t['classified']} classified) of {t['users']} "
        f"users; {t['memories_current']} current memories ({t['memories']} in all)",
        f"providers    {describe_providers(r['providers'])}",
        f"database     {'embedded' if db['embedded'] else 'external'} {db['url']}",
        f"broker       {'embedded' if broker['embedded'] else 'external'} {broker['url']} "
        f"({'reachable' if broker['reachable'] else 'not reachable'})",
    ]
    c = r["cost"]
    today = c["daily"][0] if c["daily"] else None
    lines.append(
        f"cost         ${c['per_user_month_usd']:.6f} per active user per month (estimated, "
        f"{c['active_users_30d']} users in 30 days); ${c['per_session_usd']:.6f} per session; "
        + (f"${today['cost_usd']:.4f} on {today['day']}" if today else "nothing yet"))
    click.echo("\n".join(lines))


# --- memories -------------------------------------------------------------------------------
@main.command()
@click.argument("user", type=click.UUID)
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option("--instance", type=click.UUID, metavar="ID",
              help="Only the relationship layer with this persona instance.")
@click.option("--layer", type=click.Choice(["profile", "relationship"]),
              help="Only this layer (relationship: with any persona).")
@click.option("--all", "include_all", is_flag=True,
              help="Include merged and superseded memories (current only by default).")
@click.option("--limit", "-n", type=click.IntRange(1, 10000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per memory, in a list.")
@click.option("--history", is_flag=True,
              help="Lineage: what each memory replaced and what replaced it (implies --all).")
@click.option("--sources", "sources", is_flag=True,
              help="Provenance: the chat turns each memory came from (seq, role, text).")
def memories(user: uuid.UUID, category: str | None, instance: uuid.UUID | None,
             layer: str | None, include_all: bool, limit: int, as_json: bool,
             history: bool, sources: bool) -> None:
    """List a user's memories, newest first: content, category, importance, layer, created_at,
    and the special-category label (sensitivity: health, crisis, …; empty = none).

    Layer is `profile` (shared by every persona) or `relationship:<instance>`. Find user ids
    with `eros users`. With --sources each memory is followed by the turns it came from
    (`chat_messages.seq`); "window" marks a memory whose model gave no valid citation, so
    its sources are every turn the model read.
    """
    from eros.cli._common import runtime
    from eros.memory.db.queries import MemoryFilter, list_memories

    query = MemoryFilter(user, category, instance, include_all or history, limit, layer)
    with runtime() as rt, rt.engine.connect() as conn:
        rows = list_memories(conn, query)
        if history:  # consolidation lineage (eros.cli.consolidate_cmd)
            from eros.cli.consolidate_cmd import lineage_json, render_lineage
            from eros.consolidation.db.lineage_sql import lineage

            lineages = lineage(conn, user, [r["id"] for r in rows])
        if sources:
            from eros.memory.db.provenance_sql import turns

            stored = turns(conn, user, [s for r in rows for s in r["source_seqs"] or ()])
    if sources:
        click.echo(json.dumps([{**_memory_json(r), **_sources_json(r, stored)} for r in rows],
                              ensure_ascii=False, indent=2) if as_json
                   else render_sources(rows, stored) or f"no memories for user {user}")
        return
    if history:
        click.echo(json.dumps([{**_memory_json(r), **lineage_json(lineages.get(r["id"]))}
                               for r in rows], ensure_ascii=False, indent=2) if as_json
                   else render_lineage(rows, lineages) or f"no memories for user {user}")
        return
    if as_json:
        click.echo(json.dumps([_memory_json(r) for r in rows], ensure_ascii=False, indent=2))
        return
    if not rows:
        click.echo(f"no {'' if include_all else 'current '}memories for user {user}"
                   + (f" in category {category}" if category else ""))
        return
    click.echo(render_memories(rows, show_status=include_all))


def _layer(instance_id: uuid.UUID | None) -> str:
    return "profile" if instance_id is None else f"relationship:{str(instance_id)[:8]}"


def _memory_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "content": row["content"], "category": row["category"],
            "importance": row["importance"], "created_at": row["created_at"].isoformat(),
            "layer": "profile" if row["instance_id"] is None else "relationship",
            "instance_id": str(row["instance_id"]) if row["instance_id"] else None,
            "status": row["status"],
            "session_id": str(row["session_id"]) if row["session_id"] else None,
            "embedding_model": row.get("embedding_model"),
            "sensitivity": row.get("sensitivity")}


def _sources_json(row: dict[str, Any], stored: dict[int, Any]) -> dict[str, Any]:
    seqs = row["source_seqs"]
    return {"sources": None if seqs is None else [int(s) for s in seqs],
            "source_fallback": row["source_fallback"],
            "source_turns": [_turn_json(int(s), stored.get(int(s))) for s in seqs or ()]}


def _turn_json(seq: int, turn: Any) -> dict[str, Any]:
    if turn is None:  # forgotten (eros forget --message) or deleted by the product
        return {"seq": seq, "stored": False}
    return {"seq": seq, "stored": True, "session_id": str(turn.session_id), "role": turn.role,
            "sent_at": turn.sent_at.isoformat(), "content": turn.content}


def render_sources(rows: list[dict[str, Any]], stored: dict[int, Any]) -> str:
    """Each memory, then the turns it came from, indented."""
    lines: list[str] = []
    for r in rows:
        lines.append(f"{r['created_at'].astimezone(UTC):%Y-%m-%d %H:%M}  {r['category']}  "
                     f"{_layer(r['instance_id'])}  {' '.join(r['content'].split())}")
        seqs = r["source_seqs"]
        if seqs is None:
            lines.append("    sources: not recorded (written before provenance)")
            continue
        how = "window (no valid citation)" if r["source_fallback"] else "cited"
        lines.append(f"    sources ({how}): seq {', '.join(str(s) for s in seqs)}")
        for seq in seqs:
            turn = stored.get(int(seq))
            text = "(message no longer stored)" if turn is None else \
                f"{turn.role}: {' '.join(turn.content.split())}"
            lines.append(f"      [{seq}] {text}")
    return "\n".join(lines)


def render_memories(rows: list[dict[str, Any]], *, show_status: bool = False) -> str:
    """The memories table (``show_status`` adds the status column)."""
    from eros.cli._common import table

    headers = ["created_at", "category", "imp.", "layer", *(["status"] if show_status else []),
               "sensitivity", "content"]
    body = [[r["created_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M"), r["category"],
             "" if r["importance"] is None else f"{r['importance']:.2f}", _layer(r["instance_id"]),
             *([r["status"]] if show_status else []), r.get("sensitivity") or "",
             " ".join(r["content"].split())]
            for r in rows]
    return table(headers, body)


# --- users ----------------------------------------------------------------------------------
@main.command()
@click.option("--limit", "-n", type=click.IntRange(1, 10000), default=50, show_default=True)
def users(limit: int) -> None:
    """List users with their session and memory counts, most recently active first."""
    from eros.cli._common import runtime, table
    from eros.memory.db.queries import list_users

    with runtime() as rt, rt.engine.connect() as conn:
        rows = list_users(conn, limit)
    if not rows:
        click.echo("no sessions yet (try `eros seed`)")
        return
    click.echo(table(["user", "sessions", "classified", "memories", "last active"],
                     [[str(r["user_id"]), str(r["sessions"]), str(r["classified"]),
                       str(r["memories"]),
                       r["last_active_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M")]
                      for r in rows]))
