"""Recall's lexical signal (RECALL_LEXICAL, issue 24) against real PostgreSQL: with the query's
text, the pool is re-ordered by reciprocal-rank fusion of the strategy's order and BM25; without
the text (or with the setting off) recall is the vector ranking alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from eros.recall import recall_by_vector
from eros.settings import Settings, load_settings
from tests.support.memories import QUERY, Mem, add, at_cosine

NOW = datetime.now(UTC)


def cfg(**overrides: Any) -> Settings:
    return load_settings(embedding_dim=512, **overrides)


def _seed(engine: Engine) -> uuid.UUID:
    user = uuid.uuid4()
    with engine.begin() as conn:
        add(conn, NOW,
            Mem(user, "joined a running club downtown", "event", at_cosine(0.83, 1)),
            Mem(user, "started a pottery class", "event", at_cosine(0.82, 2)),
            Mem(user, "went to an LGBTQ support group meeting", "event", at_cosine(0.80, 3)))
    return user


def test_the_query_words_lift_a_memory_the_vector_ranks_third(engine: Engine) -> None:
    user = _seed(engine)
    question = "When did she go to the LGBTQ support group?"
    for strategy in ("decay", "composite", "grouped"):
        plain = recall_by_vector(engine, user, QUERY, strategy=strategy, k=1, now=NOW,
                                 settings=cfg(recall_lexical=True))
        assert plain.memories[0].content == "joined a running club downtown"  # no text
        off = recall_by_vector(engine, user, QUERY, strategy=strategy, k=1, now=NOW,
                               settings=cfg(recall_lexical=False), query_text=question)
        assert off.memories[0].content == "joined a running club downtown"
        fused = recall_by_vector(engine, user, QUERY, strategy=strategy, k=1, now=NOW,
                                 settings=cfg(recall_lexical=True), query_text=question)
        assert fused.memories[0].content == "went to an LGBTQ support group meeting", strategy
        # a three-row scope: decay's and composite's pool is the whole scope; grouped re-orders
        # only the rows it read per category, so it does not claim exactness
        assert fused.exact == (strategy != "grouped")
