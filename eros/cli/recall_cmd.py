"""``eros recall USER "query"`` — what the chat model would be told about USER for this turn."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from eros.cli import main
from eros.core.names import DEFAULT_SCOPE, LABEL_SETS, RECALL_STRATEGIES, SCOPES

if TYPE_CHECKING:
    from eros.recall.services.recall import RecallResult


@main.command()
@click.argument("user", type=click.UUID)
@click.argument("query")
@click.option("--instance", "instance_id", type=click.UUID, default=None,
              help="Persona instance: adds its relationship layer (scope both/relationship).")
@click.option("--scope", type=click.Choice(SCOPES), default=DEFAULT_SCOPE, show_default=True,
              help="profile = across personas; relationship = user × --instance; both.")
@click.option("--strategy", type=click.Choice(RECALL_STRATEGIES), default=None,
              help="Ranking (default RECALL_STRATEGY); fused adds the user's own turns.")
@click.option("--k", "k", type=click.IntRange(1, 100), default=None,
              help="Per category for grouped (RECALL_PER_CATEGORY_K), in all otherwise "
                   "(RECALL_K).")
@click.option("--include-replaced", is_flag=True,
              help="Also recall memories consolidation merged or superseded.")
@click.option("--include-sensitive/--no-sensitive", "include_sensitive", default=None,
              help="Recall memories with a special-category label (health, crisis, …) or "
                   "leave them out (default RECALL_INCLUDE_SENSITIVE, true).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--render", "render", type=click.Choice(LABEL_SETS), default=None,
              help="Print the system-prompt section instead (with --json: add it as 'prompt').")
@click.option("--dates", is_flag=True,
              help="With --render: end each note with the day it is about (as the "
                   "eros.recall task does with RECALL_RENDER_DATES).")
def recall(user: uuid.UUID, query: str, instance_id: uuid.UUID | None, scope: str,
           strategy: str | None, k: int | None, include_replaced: bool,
           include_sensitive: bool | None, as_json: bool, render: str | None,
           dates: bool) -> None:
    """Recall USER's memories for QUERY (embedded as a search query), ranked by a strategy.

    Strategies: grouped (the original dreaming-lite recall: top-K by cosine in each category),
    decay (similarity + λ·exp(−age/τ)) and composite (similarity + w·exp(−age/τ)·importance, one
    global top-K); with RECALL_LEXICAL, the query's words are fused in by reciprocal rank.
    fused ranks composite's memories together with the user's own turns, by provenance (a
    turn a memory cites is its quote, not a second item; a turn only superseded memories
    cite is demoted), within RECALL_TOKEN_BUDGET tokens. Weights come from the RECALL_*
    settings; see docs/recall.md.
    """
    from eros.cli._common import runtime
    from eros.providers import make_providers
    from eros.recall.services.recall import recall as run_recall

    with runtime() as rt:
        _, embedder = make_providers(rt.settings)
        result = run_recall(rt.engine, embedder, user, query, instance_id=instance_id,
                            scope=scope,  # type: ignore[arg-type]
                            strategy=strategy,  # type: ignore[arg-type]
                            k=k, include_replaced=include_replaced, settings=rt.settings,
                            include_sensitive=include_sensitive)
    if as_json:
        payload = result.to_dict()
        if render:
            payload["prompt"] = result.render(render, dated=dates)
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    if render:
        click.echo(result.render(render, dated=dates))
        return
    click.echo(_human(result))


def _human(result: RecallResult) -> str:
    """A header line (strategy, scope, plan, timings) over a table of the ranked memories."""
    from eros.cli._common import table
    from eros.recall.services.recall import RecalledTurn

    now = datetime.now(UTC)
    rows = []
    for i, item in enumerate(result.items, 1):
        if isinstance(item, RecalledTurn):
            rows.append([str(i), "turn", "said", f"{item.similarity:.3f}",
                         f"{item.score:.3f}", "-",
                         f"{max(0.0, (now - item.said_at).total_seconds()) / 86400:.0f}d",
                         item.content])
            continue
        rows.append([str(i), item.category, item.layer, f"{item.similarity:.3f}",
                     f"{item.score:.3f}",
                     "-" if item.importance is None else f"{item.importance:.2f}",
                     f"{max(0.0, (now - item.created_at).total_seconds()) / 86400:.0f}d",
                     item.content])
    timings = ", ".join(f"{name} {ms:.1f} ms" for name, ms in result.timings.items())
    turns = f" + {len(result.turns)} turns" if result.ranked is not None else ""
    head = (f"{len(result.memories)} memories{turns} · strategy {result.strategy} · scope "
            f"{result.scope} · k {result.k} · plan {result.plan}"
            f"{' (exact)' if result.exact else ''}"
            f"{' · from the read replica' if result.source == 'replica' else ''} · {timings}")
    if not rows:
        return head + "\n(no memories in this scope)"
    return head + "\n" + table(["#", "category", "layer", "sim", "score", "imp", "age",
                                "content"], rows)


@main.command()
@click.argument("user", type=click.UUID, required=False)
@click.option("--drop", is_flag=True, help="Forget USER's cells instead (recall reads every "
                                           "sketch again).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per user.")
def cluster(user: uuid.UUID | None, drop: bool, as_json: bool) -> None:
    """Cut USER's memories into recall cells now; without USER, every user that is due.

    A user with RECALL_CELL_MIN_ROWS memories or more is due when never clustered or grown by
    a quarter since; one below half of it has its cells dropped. Recall then reads only the
    RECALL_CELL_PROBE_SHARE of the cells nearest the query (docs/recall.md, "Cells"). Beat
    does the same every RECALL_CELL_INTERVAL_SECS through the task eros.cluster_memories.
    Without USER it also centres the turn sketches of any embedding model that needs it.
    """
    from eros.cli._common import runtime
    from eros.recall.services import recall_cells, turn_centres

    if drop and user is None:
        raise click.UsageError("--drop needs a USER")
    with runtime() as rt:
        if drop:
            assert user is not None
            reports = [recall_cells.drop_cells(rt.engine, user)]
        elif user is not None:
            reports = [recall_cells.cluster_user(rt.engine, rt.settings, user)]
        else:
            reports = [recall_cells.refresh(rt.engine, rt.settings, state) for state in
                       recall_cells.due(rt.engine, rt.settings, limit=10**6)]
            for model, turns in turn_centres.ensure_centres(rt.engine).items():
                click.echo(f"turn sketches of {model} centred: {turns} turns", err=True)
    for r in reports:
        if as_json:
            click.echo(json.dumps(r.to_dict()))
        elif r.outcome == "dropped":
            click.echo(f"{r.user_id}: cells dropped")
        else:
            click.echo(f"{r.user_id}: {r.rows} memories in {r.cells} cells ({r.late} late); "
                       f"read {r.read_ms:.0f} ms, k-means {r.cluster_ms:.0f} ms, "
                       f"write {r.write_ms:.0f} ms")
    if not reports and not as_json:
        click.echo("no user is due for clustering")
