"""One strict argument model per task: what a message may carry, checked once at the
edge (:meth:`eros.tasks.base.ErosTask.__call__`) before any task body runs.

A JSON client's natural spellings must not change meaning: ``"false"``, ``"0"``, ``0`` and
``null`` are not booleans (``bool("false")`` is true — ``eros.forget_user(user,
sessions="false")`` once deleted every session), ids must parse as UUIDs, counts are integers
(not ``"5"``, not ``true``), and an argument the task does not have is refused rather than
ignored. ``null`` is accepted only where the task's signature defaults to None (it then means
"the default", e.g. ``include_sensitive=null`` → RECALL_INCLUDE_SENSITIVE).

A refused message changes nothing: the base task records it in ``engine.rejected_tasks``
(the dead letter: task, message id, the error — never an argument's value), counts it in
``eros_tasks_rejected_total{task}`` and returns ``{"outcome": "invalid_argument", "error":
…}`` (kept for the tasks that keep results, so a waiting caller sees why).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from eros.core.names import (
    ALLOW_SENSITIVE_TASK,
    CLAIM_TASK,
    CLASSIFY_TASK,
    CLUSTER_TASK,
    CONSOLIDATE_TASK,
    DEFAULT_SCOPE,
    FIND_CONSOLIDATION_TASK,
    FORGET_MEMORY_TASK,
    FORGET_MESSAGE_TASK,
    FORGET_SESSION_TASK,
    FORGET_USER_TASK,
    RECALL_TASK,
    REEMBED_TASK,
    RELABEL_TASK,
    RETENTION_TASK,
    SCREEN_UNSCREENED_TASK,
    RecallStrategy,
    Scope,
)
from eros.core.sensitivity import (
    OFFLINE_LABELLER,
    RELABEL_BATCH,
    RELABEL_BATCH_MAX,
    SENSITIVITY_LABELS,
    Labeller,
)


def _parse_uuid(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ValueError("must be a UUID") from None
    return value


def _sensitive(value: Any) -> bool | str | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and (value == "all" or value in SENSITIVITY_LABELS):
        return value
    raise ValueError("must be true, false, null, 'all' or one of "
                     + ", ".join(SENSITIVITY_LABELS))


#: a UUID as JSON carries it: a string that parses (kept a string: the bodies parse it again)
UuidStr = Annotated[StrictStr, AfterValidator(_parse_uuid)]
Batch = Annotated[StrictInt, Field(ge=1, le=10000)]


class TaskArgs(BaseModel):
    """Strict, closed: an unknown argument is an error, never silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ClaimArgs(TaskArgs):
    batch: Batch | None = None


class ClassifyArgs(TaskArgs):
    session_id: UuidStr
    claim_token: UuidStr | None = None
    force: StrictBool = False


class FindConsolidationArgs(TaskArgs):
    batch: Batch | None = None


class ConsolidateArgs(TaskArgs):
    user_id: UuidStr


class RecallArgs(TaskArgs):
    user_id: UuidStr
    query: StrictStr
    instance_id: UuidStr | None = None
    strategy: RecallStrategy | None = None
    k: Annotated[StrictInt, Field(ge=1, le=1000)] | None = None
    scope: Scope = DEFAULT_SCOPE
    include_replaced: StrictBool = False
    labels: StrictStr | None = None
    include_sensitive: StrictBool | None = None


class ClusterArgs(TaskArgs):
    user_id: UuidStr | None = None


class ForgetUserArgs(TaskArgs):
    user_id: UuidStr
    instance_id: UuidStr | None = None
    sessions: StrictBool = False
    #: true or "all" for every label, one label for one; false/null: not a sensitive erasure
    sensitive: Annotated[bool | str | None, PlainValidator(_sensitive)] = None


class ForgetMemoryArgs(TaskArgs):
    memory_id: UuidStr


class ForgetMessageArgs(TaskArgs):
    message_id: UuidStr


class ForgetSessionArgs(TaskArgs):
    session_id: UuidStr


class RetentionArgs(TaskArgs):
    pass


def _label_or_all(value: Any) -> str:
    if isinstance(value, str) and (value == "all" or value in SENSITIVITY_LABELS):
        return value
    raise ValueError("must be 'all' or one of " + ", ".join(SENSITIVITY_LABELS))


class AllowSensitiveArgs(TaskArgs):
    user_id: UuidStr
    label: Annotated[str, PlainValidator(_label_or_all)]


class RelabelArgs(TaskArgs):
    batch: Annotated[StrictInt, Field(ge=1, le=RELABEL_BATCH_MAX)] = RELABEL_BATCH
    max_batches: Annotated[StrictInt, Field(ge=1)] | None = None
    labeller: Labeller = OFFLINE_LABELLER


class ScreenUnscreenedArgs(TaskArgs):
    pass


class ReembedArgs(TaskArgs):
    model: StrictStr | None = None


#: every task's model, by task name (tests/unit/test_task_args.py: one per registered task,
#: fields matching the function's parameters)
MODELS: Final[dict[str, type[TaskArgs]]] = {
    CLAIM_TASK: ClaimArgs,
    CLASSIFY_TASK: ClassifyArgs,
    FIND_CONSOLIDATION_TASK: FindConsolidationArgs,
    CONSOLIDATE_TASK: ConsolidateArgs,
    RECALL_TASK: RecallArgs,
    CLUSTER_TASK: ClusterArgs,
    FORGET_USER_TASK: ForgetUserArgs,
    FORGET_MEMORY_TASK: ForgetMemoryArgs,
    FORGET_MESSAGE_TASK: ForgetMessageArgs,
    FORGET_SESSION_TASK: ForgetSessionArgs,
    RETENTION_TASK: RetentionArgs,
    REEMBED_TASK: ReembedArgs,
    ALLOW_SENSITIVE_TASK: AllowSensitiveArgs,
    RELABEL_TASK: RelabelArgs,
    SCREEN_UNSCREENED_TASK: ScreenUnscreenedArgs,
}

_PHRASES: Final = {
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "string_type": "must be a string",
    "extra_forbidden": "unknown argument",
    "missing": "missing",
    "missing_argument": "missing",
    "unexpected_positional_argument": "too many positional arguments",
}


class InvalidArguments(ValueError):
    """A message whose arguments do not fit the task; ``str()`` names the arguments and what
    is wrong with each, never the values sent (they may be a person's text)."""


def describe(err: ValidationError) -> str:
    """``name: problem; …`` from a ValidationError, without any input value."""
    parts = []
    for e in err.errors(include_input=False, include_url=False, include_context=False):
        name = str(e["loc"][0]) if e["loc"] else "arguments"
        kind = e["type"]
        if kind in _PHRASES:
            problem = _PHRASES[kind]
        elif kind == "value_error":  # our validators' own messages
            problem = str(e["msg"]).removeprefix("Value error, ")
        elif kind in ("literal_error", "greater_than_equal", "less_than_equal"):
            problem = str(e["msg"]).replace("Input should be", "must be")
        else:
            problem = f"invalid ({kind})"
        parts.append(f"{name}: {problem}")
    return "; ".join(dict.fromkeys(parts))


def validate(task_name: str, arguments: dict[str, Any]) -> TaskArgs:
    """The task's model built from a message's arguments (bound to their names); raises
    :class:`InvalidArguments`. A task without a model is refused too: an unchecked task is
    the bug this module exists to prevent."""
    model = MODELS.get(task_name)
    if model is None:
        raise InvalidArguments(f"task {task_name} has no argument model")
    try:
        return model.model_validate(arguments)
    except ValidationError as err:
        raise InvalidArguments(describe(err)) from None
