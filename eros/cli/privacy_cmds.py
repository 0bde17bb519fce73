"""Erasure and access: ``eros forget`` and ``eros export``.

Both print ids and counts; ``export`` is the one command whose output is the person's data,
and it goes only where asked (standard output or ``--output FILE``), never into a log.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

import click

from eros.cli import main
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.errors import ErosError

T = TypeVar("T")


def _owned_target(path: Path) -> None:
    """Refuse to replace what is not ours: a symlink, a non-regular file, or a file another
    user owns (a file pre-created by someone else in a shared directory stayed
    theirs when the export was written into it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ErosError(f"refusing to write {path}: it exists and is not a regular file")
    if st.st_uid != os.geteuid():
        raise ErosError(f"refusing to write {path}: it exists and belongs to another user "
                        f"(uid {st.st_uid}); remove it or choose another path")


def _write_private(path: str, write: Callable[[IO[str]], T]) -> T:
    """Run ``write`` on a new file and move it into place at ``path``: a temporary file in the
    same directory, created exclusively with mode 0600 (``mkstemp``: O_CREAT|O_EXCL), renamed
    over ``path`` only once complete. The document never goes into an inode someone else
    created or can open, an interrupted export leaves nothing behind, and an existing file is
    replaced only if it is ours."""
    target = Path(path)
    _owned_target(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            result = write(out)
            out.flush()
            os.fsync(out.fileno())
        _owned_target(target)  # again, just before the rename
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return result


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
    recorded 'failed' and the command exits 1. The user's stored recall results (eros.recall's
    memories and prompts in REDIS_URL's result backend) are deleted at once too
    (results_purged)."""
    from eros.cli._common import runtime
    from eros.core.erasure import error_code
    from eros.privacy.services import forget as svc
    from eros.privacy.services.erasure import Request, record_failed
    from eros.privacy.tasks.purge import purge_for_process

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
        # the user's stored recall results (memories, prompts) go too, as a forget task's do
        purged = purge_for_process(rt.settings, rt.engine, counts.get("erasure_id"))
    if as_json:
        click.echo(json.dumps({"forgotten": what, **counts, "results_purged": purged},
                              indent=2))
    else:
        click.echo(f"forgot {what}: {_counts(counts)}")
        click.echo("stored recall results purged: " + (
            str(purged) if purged is not None else
            "none looked for (REDIS_URL unset, or Redis unreachable: they expire within "
            "EROS_RECALL_RESULT_EXPIRES_SECS)"))


@main.command(name="export")
@click.argument("user", type=click.UUID)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the document to FILE instead of standard output.")
@click.option("--with-messages", is_flag=True,
              help="Include the chat messages' texts (otherwise only each session's outcome).")
@click.option("--format", "version", type=click.Choice(["1", "2"]), default="2",
              show_default=True,
              help="eros-export/2: everything kept except vectors; eros-export/1: memories and "
                   "session outcomes only (the first export format).")
def export(user: uuid.UUID, output: str | None, with_messages: bool, version: str) -> None:
    """Export everything eros keeps about USER as one JSON document ("format":
    "eros-export/2", see docs/export.md): every memory with its layer, persona, status, times,
    lineage, sensitivity, provenance and metadata; every session's outcome fields; the
    consolidation history with its details; the classification runs; the consolidation
    state; the user's erasure log — everything but vectors. --output FILE is written to a
    new file readable by its owner only (0600) and moved into place when complete; an
    existing FILE is replaced only if it is yours (never a link or another user's file).
    With --with-messages each turn carries its id (what `eros forget --message` takes) and
    its channel. Streams: memory use stays flat however many memories
    the user has."""
    from eros.cli._common import runtime
    from eros.privacy.services.export import export_user

    with runtime() as rt:
        if output is None:
            counts = export_user(rt.engine, user, sys.stdout, with_messages=with_messages,
                                 version=int(version))
        else:
            try:
                counts = _write_private(output, lambda out: export_user(
                    rt.engine, user, out, with_messages=with_messages, version=int(version)))
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
    from eros.privacy.db.erasure_sql import list_erasures

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
