"""What an erasure is, without I/O: its scopes, its statuses and the error code a
failed one records — ids, counts and codes only, never text."""

from __future__ import annotations

from typing import Final, Literal, get_args

from eros.core.retry import sqlstate

#: ``user`` (everything of a user), ``persona`` (one relationship: instance_id), ``memory`` (one
#: memory and its lineage), ``sensitive`` (a user's memories of a special category)
#: ``message`` (one chat message and what was learned from it,
#: ``eros forget --message``) and ``session`` (one whole conversation and what was learned
#: from it alone, ``eros forget --session``).
Scope = Literal["user", "persona", "memory", "sensitive", "message", "session"]
SCOPES: Final[tuple[Scope, ...]] = get_args(Scope)

#: an erasure_log row is written when the request has ended: ``done`` in the erasure's own
#: transaction (the record commits with the deletes, or neither does), ``failed`` after it.
Status = Literal["done", "failed"]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)

#: the longest error code kept (a SQLSTATE, an exception class name).
MAX_ERROR_CODE: Final = 64


def error_code(err: BaseException) -> str:
    """A failure as a code: the SQLSTATE when the database answered one (``57014``), else the
    exception's class name (``OperationalError``). Never the message: a database error's
    message may quote a statement's parameters, i.e. a person's text."""
    code = sqlstate(err)
    if code:
        return code[:MAX_ERROR_CODE]
    return type(getattr(err, "orig", None) or err).__name__[:MAX_ERROR_CODE]
