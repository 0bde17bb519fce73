"""The reference implementation's drain loop, rebuilt faithfully enough to time it.

It reproduces the shape that sets the reference's throughput (MISSION.md, weaknesses 2 and 6):
a claim of 10 sessions per tick with the reference's claim statement, then for each session in
turn one LLM call over the whole transcript, one embedding call PER CANDIDATE, each memory
inserted and committed on its own, then the stamp. It talks to the same fake servers through the
same SDKs as our workers, so the difference measured is the architecture, not the transport.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import openai
from sqlalchemy import Engine, insert, text
from voyageai.client import Client as VoyageClient

from bench.claim_bench import reference_claim
from eros.core.categories import normalise_category
from eros.db.schema import companion_memories
from eros.prompts import load_prompt

# MISSION.md's claim statement, run against our tables; the reference's default thresholds.
REFERENCE_CLAIM = reference_claim("engine")
MESSAGES = text("SELECT role, content FROM engine.chat_messages WHERE session_id = :sid"
                " ORDER BY sent_at")
STAMP = text("UPDATE engine.chat_sessions SET classified_at = now() WHERE id = :sid")
IDLE_SECS, STALE_SECS = 60, 600
MODEL, EMBEDDING_MODEL, DIM = "anthropic/claude-haiku-4.5", "voyage-3.5-lite", 512


def _candidates(reply: str) -> list[dict[str, Any]]:
    """The reference's strict parse: anything unexpected means no memories (and a stamp)."""
    try:
        items = json.loads(reply)["memories"]
    except (ValueError, KeyError, TypeError):
        return []
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("content"), str)]


def reference_drain(engine: Engine, llm_url: str, voyage_url: str, *, per_tick: int = 10) -> int:
    """Drain every idle session, ticks back to back (no 300 s sleep); returns the tick count."""
    llm = openai.OpenAI(base_url=llm_url, api_key="bench")
    voyage = VoyageClient(api_key="bench", base_url=voyage_url)
    system = load_prompt().system
    ticks = 0
    while True:
        now = datetime.now(UTC)
        with engine.begin() as conn:
            claimed = conn.execute(REFERENCE_CLAIM, {
                "idle_cutoff": now - timedelta(seconds=IDLE_SECS),
                "stale_cutoff": now - timedelta(seconds=STALE_SECS), "batch": per_tick}).all()
        if not claimed:
            return ticks
        ticks += 1
        for session in claimed:
            with engine.connect() as conn:
                turns = conn.execute(MESSAGES, {"sid": session.id}).all()
            transcript = "\n".join(f"{t.role}: {t.content}" for t in turns)
            response = llm.chat.completions.create(
                model=MODEL, max_tokens=1500, temperature=0,
                messages=[{"role": "system", "content": system},
                          {"role": "user", "content": transcript}])
            for item in _candidates(response.choices[0].message.content or ""):
                vector = voyage.embed([item["content"]], model=EMBEDDING_MODEL,
                                      input_type="document", output_dimension=DIM).embeddings[0]
                with engine.begin() as conn:  # one row, one commit
                    conn.execute(insert(companion_memories).values(
                        session_id=session.id, user_id=session.user_id, instance_id=None,
                        content=item["content"], category=normalise_category(item.get("category")),
                        embedding=list(vector)))
            with engine.begin() as conn:
                conn.execute(STAMP, {"sid": session.id})
