"""Erasure and access (issue 14): ``eros forget`` and ``eros export``.

Both print ids and counts; ``export`` is the one command whose output is the person's data,
and it goes only where asked (standard output or ``--output FILE``), never into a log.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import uuid
from typing import IO

import click

from eros.cli import main
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.errors import ErosError


def _private_file(path: str) -> IO[str]:
    """``path`` opened for writing, created with mode 0600 (never readable by others, even for
    a moment: the mode is given to open, not set afterwards); an existing file is truncated
    and made 0600 before a byte is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, 0o600)
        return os.fdopen(fd, "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))


@main.command()
@click.argument("user", type=click.UUID, required=False)
@click.option("--persona", "instance", type=click.UUID, default=None,
              help="Forget only the relationship with this persona (instance id): its "
                   "relationship-layer memories go, profile memories stay.")
@click.option("--sessions", is_flag=True,
              help="Also delete the chat sessions and messages (otherwise they are kept and "
                   "marked read through their last turn, so they are never extracted again).")
@click.option("--memory", "memory", type=click.UUID, default=None,
              help="Forget one memory and its lineage (what it merged or superseded).")
@click.option("--message", "message", type=click.UUID, default=None,
              help="Erase one chat message (chat_messages.id) and every memory derived "
                   "from it (their sources hold its seq), each with its lineage.")
@click.option("--session", "session", type=click.UUID, default=None,
              help="Forget one whole conversation (chat_sessions.id): its messages, every "
                   "memory learned from it alone (with lineage), and its share of the sources "
                   "of memories other sessions also support (those stay, their provenance "
                   "trimmed). Recorded with scope 'session'.")
@click.option("--sensitive", "sensitive", is_flag=False, flag_value="all", default=None,
              type=click.Choice(["all", *SENSITIVITY_LABELS]), metavar="[LABEL]",
              help="Forget only USER's memories with a special-category label (LABEL: "
                   f"{', '.join(SENSITIVITY_LABELS)}; none given: all of them), with their "
                   "lineage; the rest stays. Recorded with scope 'sensitive'.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def forget(user: uuid.UUID | None, instance: uuid.UUID | None, sessions: bool,
           memory: uuid.UUID | None, message: uuid.UUID | None, session: uuid.UUID | None,
           sensitive: str | None, yes: bool, as_json: bool) -> None:
    """Erase what eros keeps about USER (every memory, its lineage and bookkeeping), one
    relationship (--persona), one memory (--memory ID), one chat message and the memories
    derived from it (--message ID), or one whole conversation (--session ID). Immediate and
    idempotent; a classification or consolidation in flight commits nothing. The same as the
    tasks eros.forget_user / eros.forget_memory / eros.forget_message / eros.forget_session.
    Every erasure is recorded in engine.erasure_log (`eros erasures`); one that fails is
    recorded 'failed' and the command exits 1."""
    from eros.cli._common import runtime
    from eros.core.erasure import error_code
    from eros.services import forget as svc
    from eros.services.erasure import Request, record_failed

    if sum(x is not None for x in (user, memory, message, session)) != 1:
        raise click.UsageError("give one of USER, --memory ID, --message ID or --session ID")
    one = memory is not None or message is not None or session is not None
    if one and (instance is not None or sessions):
        raise click.UsageError("--persona and --sessions apply to a USER, not to --memory, "
                               "--message or --session")
    if sensitive is not None and (one or instance is not None or sessions):
        raise click.UsageError("--sensitive applies to a USER alone (no --memory, --message, "
                               "--persona or --sessions)")
    if sensitive is not None:
        what = (f"user {user}'s memories labelled " +
                ("with any special category" if sensitive == "all" else repr(sensitive)))
    elif session is not None:
        what = f"session {session} and the memories learned from it"
    elif message is not None:
        what = f"message {message} and the memories derived from it"
    elif memory is not None:
        what = f"memory {memory} and its lineage"
    elif instance is not None:
        what = f"user {user}'s relationship with persona {instance}"
    else:
        what = f"everything eros keeps about user {user}"
    if sessions:
        what += ", including chat sessions and messages"
    if not yes:
        click.confirm(f"Permanently forget {what}?", abort=True, err=True)
    with runtime() as rt:
        if sensitive is not None:
            assert user is not None
            request = Request("sensitive", user_id=user)
        elif session is not None:
            request = svc.session_request(session)
        elif message is not None:
            request = svc.message_request()
        elif memory is not None:
            request = svc.memory_request(memory)
        else:
            assert user is not None
            request = svc.user_request(user, instance_id=instance)
        try:
            if sensitive is not None:
                assert user is not None
                counts = svc.forget_sensitive(rt.engine, user,
                                              None if sensitive == "all" else sensitive,
                                              request=request)
            elif session is not None:
                counts = svc.forget_session(rt.engine, session, request=request)
            elif message is not None:
                counts = svc.forget_message(rt.engine, message, request=request)
            elif memory is not None:
                counts = svc.forget_memory(rt.engine, memory, request=request)
            else:
                assert user is not None
                counts = svc.forget_user(rt.engine, user, instance_id=instance,
                                         sessions=sessions, request=request)
        except Exception as err:
            # recorded (status 'failed', an error code) and counted; exit code 1
            erasure_id = record_failed(rt.engine, request, err)
            raise ErosError(f"the erasure failed ({error_code(err)}); nothing was removed"
                            f" (erasure_log id {erasure_id}); run it again") from None
    if as_json:
        click.echo(json.dumps({"forgotten": what, **counts}, indent=2))
    else:
        click.echo(f"forgot {what}: {_counts(counts)}")


@main.command(name="export")
@click.argument("user", type=click.UUID)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the document to FILE instead of standard output.")
@click.option("--with-messages", is_flag=True,
              help="Include the chat messages' texts (otherwise only each session's outcome).")
@click.option("--format", "version", type=click.Choice(["1", "2"]), default="2",
              show_default=True,
              help="eros-export/2: everything kept except vectors; eros-export/1: memories and "
                   "session outcomes only (the issue-14 format).")
def export(user: uuid.UUID, output: str | None, with_messages: bool, version: str) -> None:
    """Export everything eros keeps about USER as one JSON document ("format":
    "eros-export/2", see docs/export.md): every memory with its layer, persona, status, times,
    lineage, sensitivity, provenance and metadata; every session's outcome fields; the
    consolidation history with its details; the classification runs; the consolidation
    state; the user's erasure log — everything but vectors. --output FILE is created
    readable by its owner only (0600). Streams: memory use stays flat however many memories
    the user has."""
    from eros.cli._common import runtime
    from eros.services.export import export_user

    with runtime() as rt:
        if output is None:
            counts = export_user(rt.engine, user, sys.stdout, with_messages=with_messages,
                                 version=int(version))
        else:
            try:
                with _private_file(output) as out:
                    counts = export_user(rt.engine, user, out, with_messages=with_messages,
                                         version=int(version))
            except OSError as err:
                raise ErosError(f"cannot write {output}: {err.strerror}") from None
    click.echo(f"exported user {user}: {_counts(counts)}", err=True)


@main.command()
@click.argument("user", type=click.UUID, required=False)
@click.option("--failed", is_flag=True, help="Only erasures that failed.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
def erasures(user: uuid.UUID | None, failed: bool, limit: int, as_json: bool) -> None:
    """List erasure requests (engine.erasure_log), newest first: USER's, or everyone's.
    Ids, counts and error codes only."""
    from eros.cli._common import runtime
    from eros.db.erasure_sql import list_erasures

    with runtime() as rt, rt.engine.connect() as conn:
        rows = list_erasures(conn, user, failed_only=failed, limit=limit)
    if as_json:
        click.echo(json.dumps([{k: (v.isoformat() if hasattr(v, "isoformat") else
                                    str(v) if isinstance(v, uuid.UUID) else v)
                                for k, v in r.items()} for r in rows], indent=2))
        return
    if not rows:
        click.echo("no erasures")
        return
    for r in rows:
        target = (f"memory {r['memory_id']}" if r["memory_id"] else
                  f"session {r['session_id']}" if r.get("session_id") else
                  f"persona {r['instance_id']}" if r["instance_id"] else "")
        what = r["error_code"] if r["status"] == "failed" else _counts(r["counts"])
        click.echo(f"{r['id']:>6} {r['requested_at']:%Y-%m-%d %H:%M:%S} {r['status']:<6}"
                   f" {r['scope']:<9} user {r['user_id'] or '-'} {target} {what}".rstrip())
