"""The ledger's actions: each a GET that asks for confirmation and a POST (with the session's
CSRF token) that acts — through the same services as ``eros forget``, ``eros rescreen
--restore`` and ``eros export``, recorded where theirs are, and in the access log."""

from __future__ import annotations

import tempfile
import uuid
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from eros.ledger.services import ledger as svc
from eros.ledger.web import ctx, error, render, require_csrf
from eros.privacy.tasks.purge import purge_for_process

CSRF_MISSING = "The form's CSRF token is missing or wrong: reload the page and try again."


def _confirm(request: Request, title: str, what: str, button: str, *,
             back: str, option: tuple[str, str] | None = None) -> Response:
    return render(request, "confirm.html", title=title, what=what, button=button, back=back,
                  option=option)


def _done(user_id: uuid.UUID | None, result: dict[str, Any]) -> Response:
    where = f"/users/{user_id}" if user_id else "/"
    erasure = result.get("erasure_id")
    return RedirectResponse(where + (f"?done={erasure}" if erasure else ""), status_code=303)


async def _erase(request: Request, what: svc.Erasure, target: uuid.UUID,
                 owner: uuid.UUID | None, *, sessions: bool = False) -> Response:
    c = ctx(request)
    try:
        result = await run_in_threadpool(svc.erase, c.engine, what, target, sessions=sessions)
    except svc.ErasureFailed as err:
        return error(request, 500, f"The {what} was not forgotten: {err}.")
    # the user's stored recall results go too, as after eros forget
    await run_in_threadpool(purge_for_process, c.settings, c.engine, result.get("erasure_id"))
    return _done(owner, result)


async def _act(request: Request, action: svc.Action, user_id: uuid.UUID | None,
               object_id: uuid.UUID | None = None) -> dict[str, str] | Response:
    """The POST's form once its CSRF token checks out, the action recorded in the access log
    before it is carried out (no record, no action); a 403 page otherwise."""
    fields = await require_csrf(request)
    if fields is None:
        return error(request, 403, CSRF_MISSING)
    await run_in_threadpool(svc.log_access, ctx(request).engine, action, user_id, object_id)
    return fields


async def forget_memory(request: Request) -> Response:
    memory_id: uuid.UUID = request.path_params["memory_id"]
    c = ctx(request)
    owner = await run_in_threadpool(svc.memory_owner, c.engine, memory_id)
    if request.method == "GET":
        return _confirm(request, "Forget this memory",
                        f"Permanently forget memory {memory_id} and its lineage (what it merged "
                        "or superseded, and what was derived from it)? Its source turns are "
                        "never extracted again.", "Forget the memory",
                        back=f"/memories/{memory_id}" if owner else "/")
    fields = await _act(request, "forget_memory", owner, memory_id)
    if isinstance(fields, Response):
        return fields
    return await _erase(request, "memory", memory_id, owner)


async def forget_message(request: Request) -> Response:
    message_id: uuid.UUID = request.path_params["message_id"]
    c = ctx(request)
    owner = await run_in_threadpool(svc.message_owner, c.engine, message_id)
    if request.method == "GET":
        return _confirm(request, "Forget this message",
                        f"Permanently erase chat message {message_id} and every memory derived "
                        "from it, each with its lineage?", "Forget the message",
                        back=f"/users/{owner}" if owner else "/")
    fields = await _act(request, "forget_message", owner, message_id)
    if isinstance(fields, Response):
        return fields
    return await _erase(request, "message", message_id, owner)


async def forget_user(request: Request) -> Response:
    user_id: uuid.UUID = request.path_params["user_id"]
    if request.method == "GET":
        return _confirm(request, "Forget this user",
                        f"Permanently forget everything eros keeps about user {user_id}: every "
                        "memory, its lineage and bookkeeping?", "Forget the user",
                        back=f"/users/{user_id}",
                        option=("sessions", "Also delete the chat sessions and messages "
                                            "(otherwise they are kept and never extracted "
                                            "again)"))
    fields = await _act(request, "forget_user", user_id)
    if isinstance(fields, Response):
        return fields
    return await _erase(request, "user", user_id, user_id,
                        sessions=fields.get("sessions") == "on")


async def restore(request: Request) -> Response:
    memory_id: uuid.UUID = request.path_params["memory_id"]
    c = ctx(request)
    owner = await run_in_threadpool(svc.memory_owner, c.engine, memory_id)
    if owner is None:
        return error(request, 404, f"There is no memory {memory_id}.")
    if request.method == "GET":
        return _confirm(request, "Restore this memory",
                        f"Make quarantined memory {memory_id} current again? Recall will "
                        "return it.", "Restore the memory", back=f"/memories/{memory_id}")
    fields = await _act(request, "restore", owner, memory_id)
    if isinstance(fields, Response):
        return fields
    if not await run_in_threadpool(svc.restore_quarantined, c.engine, memory_id):
        return error(request, 409, f"Memory {memory_id} is not quarantined.")
    return RedirectResponse(f"/memories/{memory_id}", status_code=303)


async def export(request: Request) -> Response:
    user_id: uuid.UUID = request.path_params["user_id"]
    c = ctx(request)
    if request.method == "GET":
        return _confirm(request, "Export this user",
                        f"Download everything eros keeps about user {user_id} as one JSON "
                        "document (eros-export/2, docs/export.md)?", "Download",
                        back=f"/users/{user_id}",
                        option=("with_messages", "Include the chat messages' texts"))
    fields = await _act(request, "export", user_id)
    if isinstance(fields, Response):
        return fields
    # spooled: memory stays flat for a big user (the file it spills to is the owner's only)
    out = tempfile.SpooledTemporaryFile(  # noqa: SIM115 (closed by the stream)
        max_size=8 << 20, mode="w+", encoding="utf-8")
    await run_in_threadpool(svc.export, c.engine, user_id, out,
                            with_messages=fields.get("with_messages") == "on")
    out.seek(0)

    def chunks() -> Any:
        try:
            while block := out.read(1 << 16):
                yield block
        finally:
            out.close()

    return StreamingResponse(chunks(), media_type="application/json", headers={
        "Content-Disposition": f'attachment; filename="eros-export-{user_id}.json"'})
