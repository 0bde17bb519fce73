"""``eros consolidate USER [--dry-run] [--json]`` — one consolidation pass in this process —
and the lineage rendering behind ``eros memories USER --history``."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from eros.cli import main
from eros.errors import ErosError, PermanentError, TransientError

if TYPE_CHECKING:
    from eros.cli._common import Runtime
    from eros.consolidation.db.lineage_sql import Lineage
    from eros.consolidation.services.consolidate import Consolidator
    from eros.consolidation.services.consolidation_report import ConsolidationReport


@main.command()
@click.argument("user", type=click.UUID)
@click.option("--dry-run", is_flag=True,
              help="Show the clusters and the proposed changes (the model is asked); write "
                   "nothing, not even the attempt counter.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def consolidate(user: uuid.UUID, dry_run: bool, as_json: bool) -> None:
    """Consolidate one user's memories now: merge duplicates, supersede outdated facts.

    Exact duplicates merge without a model call; near-duplicate clusters (cosine similarity
    >= CONSOLIDATION_SIMILARITY within a layer and category) go to the model in one call.
    Nothing is deleted: replaced memories keep their rows (see `eros memories USER --history`).
    Runs a user the finder has parked after CONSOLIDATION_MAX_ATTEMPTS failures, and un-parks
    it when the pass succeeds.
    """
    from eros.cli._common import runtime
    from eros.consolidation.services.consolidate import consolidate as run
    from eros.consolidation.services.consolidate import record_failure, start_pass

    with runtime() as rt:
        c = _consolidator(rt)
        if not dry_run:
            start_pass(c, user)
        try:
            report = run(c, user, dry_run=dry_run)
        except (TransientError, PermanentError) as err:
            transient = isinstance(err, TransientError)
            if not dry_run:
                record_failure(c, user, "retrying" if transient else "permanent_error", str(err))
            kind = "transient" if transient else "permanent"
            raise ErosError(f"user {user}: {kind} {err.provider} error: {err}") from None
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2, default=str))
        return
    click.echo(render_report(report))
    if report.outcome in ("unparseable", "busy"):
        raise ErosError(f"user {user}: {report.outcome}: {report.error or 'nothing written'}")


def _consolidator(rt: Runtime) -> Consolidator:
    from eros.consolidation.core.consolidation_reply import load_consolidation_prompt
    from eros.consolidation.services.consolidate import Consolidator
    from eros.providers import make_providers

    settings = rt.settings
    llm, embedder = make_providers(settings.model_copy(
        update={"dreaming_model": settings.consolidation_model_name}))
    return Consolidator(settings, rt.engine, llm, embedder, load_consolidation_prompt())


def _day(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def render_report(r: ConsolidationReport) -> str:
    """The clusters, the (proposed) changes and the result, for a person."""
    lines = [f"user {r.user_id}: {r.memories} current memories, near-duplicate share "
             f"{r.share_before:.3f}; {r.exact_groups} exact-duplicate groups, "
             f"{r.clusters} near-duplicate clusters"]
    if r.cluster_view:
        lines.append("== clusters ==")
    for view in r.cluster_view:
        label = f"cluster {view['cluster']}" if view["sent"] else f"not sent ({view['reason']})"
        lines.append(f"  {label}, category {view['category']}:")
        for m in view["members"]:
            tag = f"[{m['number']}]" if m["number"] is not None else "   "
            lines.append(f"    {tag} {_day(m['created_at'])}  {m['content']}"
                         + ("  (new)" if m["new"] else ""))
    lines.append("== proposed changes ==" if r.dry_run else "== changes ==")
    if not r.changes:
        lines.append("  none")
    for change in r.changes:
        where = "exact duplicates" if change["kind"] == "exact" else f"cluster {change['cluster']}"
        how = "new row" if change["new_row"] else "kept"
        lines.append(f"  {where}: canonical \"{change['result']}\" ({how})")
        lines += [f"    {c['status']:<11} {c['content']}" for c in change["changes"]]
    if r.rejected:
        lines.append("== rejected answers (nothing changes for these clusters) ==")
        lines += [f"  cluster {x['cluster']}: {x['reason']}" for x in r.rejected]
    after = "" if r.share_after is None else f" -> {r.share_after:.3f}"
    verb = "would merge" if r.dry_run else "merged"
    lines.append(f"outcome {r.outcome}; {verb} {r.merged}, superseded {r.superseded}, "
                 f"canonical rows {r.canonical_written}; share {r.share_before:.3f}{after}; "
                 f"{r.llm_calls} model call(s), {r.embedding_calls} embedding call(s)"
                 + (" (dry run: nothing was written)" if r.dry_run else ""))
    if r.error and r.outcome != "consolidated":
        lines.append(f"error: {r.error}")
    return "\n".join(lines)


def render_lineage(rows: list[dict[str, Any]], lineages: dict[uuid.UUID, Lineage]) -> str:
    """Each memory with what it replaced and what replaced it (``memories --history``)."""
    out = []
    for row in rows:
        when = row["created_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        out.append(f"{when}  {row['category']:<10} {row['status']:<10} {row['content']}"
                   f"  [{str(row['id'])[:8]}]")
        lineage = lineages.get(row["id"])
        if lineage is None:
            continue
        for src in lineage.replaced:
            verb = "merged" if src["action"] == "merge" else "superseded"
            at = src["at"].astimezone(UTC).strftime("%Y-%m-%d")
            out.append(f"    <- {verb} {src['content']}  [{str(src['id'])[:8]}] on {at}"
                       + (f" by {src['model']}" if src["model"] else ""))
        if lineage.replaced_by is not None:
            by = lineage.replaced_by
            at = by["at"].astimezone(UTC).strftime("%Y-%m-%d") if by["at"] else "?"
            out.append(f"    -> {by['status']} into {by['content']}  [{str(by['id'])[:8]}] "
                       f"on {at}")
    return "\n".join(out)


def lineage_json(lineage: Lineage | None) -> dict[str, Any]:
    if lineage is None:
        return {"replaced": [], "replaced_by": None}
    safe: dict[str, Any] = json.loads(json.dumps({"replaced": lineage.replaced,
                                                  "replaced_by": lineage.replaced_by},
                                                 default=str))
    return safe
