"""``eros guard check`` (try the memory guard on texts), ``eros guard train`` (make the meaning
layer's model ahead of time) and ``eros rescreen`` (run the current guard over stored
memories). Both make exactly the classify path's decision with the
configured providers (offline: the e5 embedder when installed); no text is ever logged.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

import click

from eros.cli import main
from eros.cli._common import runtime

#: texts judged per embedding request
BATCH = 64


@main.group()
def guard() -> None:
    """The memory guard (docs/security.md)."""


def _inputs(stream: IO[str]) -> Iterator[str]:
    """Each non-blank line: ``{"text": …}`` JSON, or the line itself as plain text."""
    for line in stream:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict) and isinstance(record.get("text"), str):
                yield record["text"]
                continue
        yield line


@guard.command(name="check")
@click.argument("file", type=click.File("r", encoding="utf-8"), required=False)
def guard_check(file: IO[str] | None) -> None:
    """Judge texts as the classify path would judge an extracted memory.

    Reads FILE (or stdin): JSON lines {"text": ...} or plain lines (blank lines are skipped).
    Prints one JSON line per input, in order: {"keep": true|false, "layer": ..., "reason":
    ..., "rule": ..., "screened": ...}; layer is length, rules, secrets, meaning or llm (null
    when kept); screened is false for a kept text the meaning layer has no model to judge yet
    (classify would write it unscreened).
    """
    from eros.guard.services.guard_model import judge_texts
    from eros.providers import make_providers

    stream = file if file is not None else sys.stdin
    with runtime() as rt:
        llm, embedder = make_providers(rt.settings)
        batch: list[str] = []
        for text in _inputs(stream):
            batch.append(text)
            if len(batch) >= BATCH:
                _print(judge_texts(rt.settings, rt.engine, embedder, batch, llm=llm))
                batch = []
        if batch:
            _print(judge_texts(rt.settings, rt.engine, embedder, batch, llm=llm))


@guard.command(name="train")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def guard_train(as_json: bool) -> None:
    """Make the meaning layer's model for the configured embedder, once for the fleet.

    A live embedder (VOYAGE_API_KEY): the exemplar bank (about 500 short texts) is embedded
    within the EMBEDDING_* limits, the classifier fitted and stored in guard_classifiers under
    an advisory lock (`eros migrate` and the first worker to start do the same); then the
    memories written unscreened meanwhile are judged. The offline e5 embedder: the model ships
    in the package, nothing to do. Prints the outcome (trained, stored, shipped, busy, off),
    the tokens and the cost; never a text.
    """
    from eros.dreaming.services.guard_unscreened import settle_unscreened
    from eros.guard.services.guard_training import train_for_settings
    from eros.providers import make_providers

    with runtime() as rt:
        report: dict[str, Any] = train_for_settings(rt.settings, rt.engine).to_dict()
        llm, embedder = make_providers(rt.settings)
        settled = settle_unscreened(rt.settings, rt.engine, embedder, llm=llm)
        report["unscreened"] = settled.to_dict()
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(f"{report['outcome']}: model {report['embedding_model']}, bank {report['bank']}"
               f", {report['requests']} requests, {report['embedding_tokens']} embedding "
               f"tokens, ${report['cost_usd']:.6f}; unscreened memories: "
               f"{report['unscreened']['current']} made current, "
               f"{report['unscreened']['quarantined']} quarantined")
    if report["outcome"] == "busy":
        raise click.ClickException("another process is training it now; try again shortly")


def _print(results: list[dict[str, Any]]) -> None:
    for result in results:
        click.echo(json.dumps(result, ensure_ascii=False))


@main.command()
@click.option("--dry-run", is_flag=True, help="Count what would be quarantined; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option("--restore", type=click.UUID, default=None,
              help="Make one quarantined memory current again.")
@click.option("--restore-turn", "restore_turn", type=click.IntRange(min=1), default=None,
              metavar="SEQ", help="Make one quarantined indexed turn (its message's seq) "
                                  "recallable again.")
def rescreen(dry_run: bool, as_json: bool, restore: uuid.UUID | None,
             restore_turn: int | None) -> None:
    """Run the current memory guard over every stored memory that can be recalled or restored,
    and over the indexed turns (engine.memory_turns).

    Current memories and the history behind them (merged and superseded rows, which recall
    --include-replaced shows and forget can make current again). Memories it would drop move
    to status 'quarantined' (never recalled; the reason and former status are kept in
    metadata.guard_quarantine, as codes). Turns are judged as classify judges a turn it
    indexes: one the meaning layer now rejects is quarantined (never recalled), one the rules
    now reject leaves the index (current or quarantined); a quarantined turn the guard now
    passes stays quarantined. Prints counts per reason, never text. `--restore ID` puts a
    memory back as it was, `--restore-turn SEQ` a turn.
    """
    from eros.dreaming.services.rescreen_turns import rescreen_turns
    from eros.guard.db import guard_sql
    from eros.guard.services.guard_model import screen_texts
    from eros.providers import make_providers
    from eros.recall.db import turn_trust_sql

    with runtime() as rt:
        if restore is not None:
            with rt.engine.begin() as conn:
                if not guard_sql.restore(conn, restore):
                    raise click.ClickException(f"memory {restore} is not quarantined")
            click.echo(json.dumps({"restored": str(restore)}) if as_json
                       else f"restored {restore}")
            return
        if restore_turn is not None:
            with rt.engine.begin() as conn:
                if not turn_trust_sql.restore_turn(conn, restore_turn):
                    raise click.ClickException(f"turn {restore_turn} is not quarantined")
            click.echo(json.dumps({"restored_turn": restore_turn}) if as_json
                       else f"restored turn {restore_turn}")
            return
        llm, embedder = make_providers(rt.settings)
        from eros.guard.services.guard_model import meaning_layer

        layer = meaning_layer(rt.settings, rt.engine, embedder)
        if layer.pending:
            raise click.ClickException(f"the meaning layer has no model yet ({layer.state}): "
                                       "run `eros guard train` first")
        scanned, moved = 0, 0
        reasons: Counter[str] = Counter()
        for batch in guard_sql.screenable_memories(rt.engine):
            vectors = [m.embedding if m.embedding_model == embedder.name else None
                       for m in batch]
            screening = screen_texts(rt.settings, rt.engine, embedder,
                                     [m.content for m in batch], llm=llm, vectors=vectors,
                                     need_vectors=False)
            scanned += len(batch)
            flagged = [(m.id, {"reason": v.reason or "unknown", "rule": v.rule or "",
                               "layer": v.layer or ""})
                       for m, v in zip(batch, screening.verdicts, strict=True) if not v.ok]
            reasons.update(why["reason"] for _, why in flagged)
            if flagged and not dry_run:
                with rt.engine.begin() as conn:
                    moved += guard_sql.quarantine(conn, flagged)
        turns = rescreen_turns(rt.settings, rt.engine, embedder, llm=llm, dry_run=dry_run)
        by_reason = dict(sorted(reasons.items()))
        counts = {"scanned": scanned, "flagged": sum(reasons.values()),
                  "quarantined": moved, "by_reason": by_reason, "dry_run": dry_run,
                  "turns": turns.to_dict()}
        if as_json:
            click.echo(json.dumps(counts))
            return
        verb = "would quarantine" if dry_run else "quarantined"
        detail = ", ".join(f"{k} {v}" for k, v in by_reason.items()) or "none"
        click.echo(f"scanned {scanned} stored memories; {verb} "
                   f"{counts['flagged'] if dry_run else moved} ({detail})")
        turn_detail = ", ".join(f"{k} {v}" for k, v in turns.by_reason.items()) or "none"
        click.echo(f"scanned {turns.scanned} indexed turns; {verb} {turns.quarantined}, "
                   f"{'would remove' if dry_run else 'removed'} {turns.removed} from the "
                   f"index ({turn_detail})")
