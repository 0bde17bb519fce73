"""The state of the memory guard's meaning layer, as the whole fleet sees it.

One of:

- ``ready``: a model for (embedding model, exemplar bank) exists — shipped in the package (the
  offline e5 embedder) or trained into ``engine.guard_classifiers`` (a live embedder);
- ``training``: none yet, and a process holds the training lock right now;
- ``unavailable``: none yet and nobody is training (a training failed, or no worker has started
  since the bank changed): ``eros guard train`` makes it;
- ``unusable``: a model exists but the embedding does not separate the bank (balanced accuracy
  below 0.8): the layer judges nothing, rules and secrets still run;
- ``off``: ``MEMORY_GUARD_CLASSIFIER=off``, or ``auto`` with the hash embedder (no meaning).

While the state is ``training`` or ``unavailable`` (:data:`PENDING`) a candidate that passes the
rules and the secret checks is written ``unscreened`` — never recalled nor consolidated — until
``eros.screen_unscreened`` judges it with the model. Read by the services (per process, cached),
by the metrics (``eros_guard_meaning_layer``) and by ``eros status``.
"""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Connection

from eros.guard.core.guard_meaning import MeaningModel, load_bank, load_shipped
from eros.guard.db import guard_sql, turn_guard_sql
from eros.providers.offline import offline_embedder_name
from eros.providers.offline.hashing import LocalEmbedder
from eros.settings import Settings

State = Literal["ready", "training", "unavailable", "unusable", "off"]
STATES: tuple[State, ...] = ("ready", "training", "unavailable", "unusable", "off")
#: no model yet: what passes the rules waits as ``unscreened``
PENDING: tuple[State, ...] = ("training", "unavailable")
#: the hash embedder's recorded name (feature hashing has no meaning)
HASH_EMBEDDER = LocalEmbedder.name


def embedder_name(settings: Settings) -> str:
    """The embedding model a worker with these settings uses, without building it."""
    if settings.embedder_is_offline:
        return offline_embedder_name(settings.embedding_dim, settings.eros_offline_embedder)
    return settings.embedding_model


def layer_off(settings: Settings, embedding_model: str) -> bool:
    mode = settings.memory_guard_classifier
    return mode == "off" or (mode == "auto" and embedding_model == HASH_EMBEDDER)


def resolve(settings: Settings, conn: Connection, embedding_model: str,
            ) -> tuple[State, MeaningModel | None, str | None]:
    """(state, the model if any, where it comes from: ``package`` or ``database``)."""
    if layer_off(settings, embedding_model):
        return "off", None, None
    digest = load_bank().digest
    source = "package"
    model = load_shipped(embedding_model, digest)
    if model is None:
        source = "database"
        model = guard_sql.load_classifier(conn, embedding_model, digest)
    if model is not None:
        return ("ready" if model.usable else "unusable"), model, source
    if guard_sql.training_in_progress(conn, embedding_model, digest):
        return "training", None, None
    return "unavailable", None, None


def layer_report(settings: Settings, conn: Connection) -> dict[str, Any]:
    """What ``eros status`` prints under ``guard``: the state, the model's figures (never
    weights), what training it cost and how many memories (and user turns) wait
    unscreened."""
    name = embedder_name(settings)
    state, model, source = resolve(settings, conn, name)
    report: dict[str, Any] = {"meaning_layer": state, "embedding_model": name,
                              "bank": load_bank().digest, "source": source,
                              "unscreened_memories": guard_sql.count_unscreened(conn),
                              "unscreened_turns": turn_guard_sql.count_unscreened(conn)}
    if model is not None:
        report.update(threshold=round(model.threshold, 4),
                      balanced_accuracy=round(model.balanced_accuracy, 4))
    if source == "database":
        info = guard_sql.classifier_info(conn, name, report["bank"]) or {}
        trained = info.get("trained_at")
        report.update(trained_at=trained.isoformat() if trained else None,
                      training_embedding_tokens=info.get("embedding_tokens"),
                      training_cost_usd=info.get("cost_usd"))
    return report
