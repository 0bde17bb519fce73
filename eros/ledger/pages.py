"""The ledger's pages (GET): users, a user's ledger, one memory, the recall playground and
the status — and the two JSON endpoints for scripts. Handlers are plain functions (Starlette
runs them in its thread pool); each view of a person's data is in the access log first."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from eros.core.categories import CATEGORIES
from eros.core.names import DEFAULT_LABELS, DEFAULT_SCOPE, LABEL_SETS, SCOPES
from eros.errors import RecallError
from eros.ledger.services import ledger as svc
from eros.ledger.web import ctx, error, render
from eros.recall.core.ranking import STRATEGIES


def _int(request: Request, name: str, default: int) -> int:
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


def users(request: Request) -> Response:
    """Search by id (a prefix), with session and memory counts, most recently active first."""
    from eros.ledger.db.ledger_sql import search_users

    q = request.query_params.get("q", "").strip()
    try:  # a whole id opens that user's ledger
        return Response(status_code=303, headers={"Location": f"/users/{uuid.UUID(q)}"})
    except ValueError:
        pass
    with ctx(request).engine.connect() as conn:
        rows = search_users(conn, q, limit=100)
    return render(request, "users.html", users=rows, q=q)


def user(request: Request) -> Response:
    user_id: uuid.UUID = request.path_params["user_id"]
    category = request.query_params.get("category") or None
    if category not in (None, *CATEGORIES):
        category = None
    c = ctx(request)
    svc.log_access(c.engine, "view_user", user_id)
    ledger = svc.user_ledger(c.engine, user_id, page=_int(request, "page", 1),
                             size=_int(request, "size", svc.PAGE_SIZE), category=category)
    return render(request, "user.html", ledger=ledger, categories=CATEGORIES,
                  done=request.query_params.get("done"))


def memory(request: Request) -> Response:
    memory_id: uuid.UUID = request.path_params["memory_id"]
    c = ctx(request)
    owner = svc.memory_owner(c.engine, memory_id)
    if owner is None:
        return error(request, 404, f"There is no memory {memory_id} (forgotten, or never "
                                   "written).")
    svc.log_access(c.engine, "view_memory", owner, memory_id)
    row = svc.memory_detail(c.engine, memory_id)
    if row is None:
        return error(request, 404, f"There is no memory {memory_id}.")
    return render(request, "memory.html", m=row, user_id=owner)


def _recall_args(request: Request) -> dict[str, Any]:
    q = request.query_params
    instance = q.get("instance") or None
    try:
        instance_id = uuid.UUID(instance) if instance else None
    except ValueError:
        instance_id = None
    scope = q.get("scope") if q.get("scope") in SCOPES else DEFAULT_SCOPE
    lang = q.get("lang") if q.get("lang") in LABEL_SETS else DEFAULT_LABELS
    return {"instance_id": instance_id, "scope": scope, "lang": lang}


def recall(request: Request) -> Response:
    """What recall returns for ``q`` under every strategy, and the prompt section."""
    user_id: uuid.UUID = request.path_params["user_id"]
    query = request.query_params.get("q", "")
    args = _recall_args(request)
    c = ctx(request)
    played, problem = None, ""
    if query.strip():
        svc.log_access(c.engine, "recall", user_id)
        try:
            played = svc.playground(c.engine, c.embedder, c.settings, user_id, query, **args)
        except RecallError as err:
            problem = str(err)
    return render(request, "recall.html", user_id=user_id, q=query, played=played,
                  problem=problem, scopes=SCOPES, langs=LABEL_SETS, strategies=STRATEGIES, **args)


def recall_json(request: Request) -> Response:
    user_id: uuid.UUID = request.path_params["user_id"]
    query = request.query_params.get("q", "")
    if not query.strip():
        return JSONResponse({"error": "give a query: ?q=…"}, status_code=400)
    c = ctx(request)
    svc.log_access(c.engine, "recall", user_id)
    try:
        played = svc.playground(c.engine, c.embedder, c.settings, user_id, query,
                                **_recall_args(request))
    except RecallError as err:
        return JSONResponse({"error": str(err)}, status_code=400)
    return JSONResponse({"strategies": {r.strategy: {**r.to_dict(), "prompt": prompt}
                                        for r, prompt in played.results},
                         "recall_ms": round(played.recall_ms, 3),
                         "total_ms": round(played.total_ms, 3)})


def _status(request: Request) -> dict[str, Any]:
    from eros.dreaming.services.status import status_report

    c = ctx(request)
    return status_report(c.engine, c.settings, db_embedded=c.db_embedded,
                         broker=c.broker_info())


def status(request: Request) -> Response:
    return render(request, "status.html", r=_status(request))


def status_json(request: Request) -> Response:
    return JSONResponse(_status(request))
