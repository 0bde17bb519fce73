"""The memory ledger's speed (issue 33): (1) the first page of a user with 10,000 memories,
served by the application (``eros.ledger``, in-process over ASGI: the server's own time,
access-log write, every query, the template) — median of 20 after 3 warm-ups, with the page
size and the bytes; the last page too (the deepest OFFSET); (2) the recall playground (every
strategy, one page) against the recall calls themselves (``eros.recall.services.recall.recall`` for
each strategy, back to back in the same run): its overhead must not exceed the recall.

Data: one user with N memories (default 10,000) over two years, in every category, with
random embeddings, each citing one of 200 turns of the user's sessions; 1 in 20 merged into
another (lineage); 50 quarantined; plus ``--others`` memories of other users.

    python -m bench.ledger_bench [--memories 10000] [--others 50000] [--repeats 20]
                                 [--size 50] [--json FILE]

Uses ``EROS_BENCH_DATABASE_URL`` or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, text

from bench.claim_bench import machine, scratch_database

TURNS = text("""
WITH s AS (INSERT INTO engine.chat_sessions (user_id, last_active_at, classified_at)
           SELECT :u, now() - make_interval(days => g), now() - make_interval(days => g)
             FROM generate_series(1, 20) g RETURNING id)
INSERT INTO engine.chat_messages (session_id, role, content)
SELECT s.id, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END,
       'turn ' || g || ' of a conversation about daily life, work and the people around'
  FROM s CROSS JOIN generate_series(1, 10) g
""")

MEMORIES = text("""
INSERT INTO engine.companion_memories (user_id, content, category, importance, created_at,
                                       source_seqs, embedding, status)
SELECT :u, 'memory ' || g || ': likes hiking in the mountains with friends on weekends',
       (ARRAY['fact','preference','event','emotion','relation'])[1 + g % 5],
       (g % 10) / 10.0, now() - make_interval(mins => g * 105),
       ARRAY[(SELECT min(seq) FROM engine.chat_messages) + g % :turns],
       (SELECT CAST(array_agg(random() - 0.5) AS vector) FROM generate_series(1, :dim) d
         WHERE g > 0),
       CASE WHEN g % 200 = 7 THEN 'quarantined' ELSE 'current' END
  FROM generate_series(1, :n) g
""")

MERGES = text("""
WITH pairs AS (
  SELECT id, lead(id) OVER (ORDER BY created_at) AS canonical,
         row_number() OVER (ORDER BY created_at) AS r
    FROM engine.companion_memories WHERE user_id = :u AND status = 'current')
, merged AS (
  UPDATE engine.companion_memories m SET status = 'merged', replaced_by = p.canonical,
         replaced_at = now()
    FROM pairs p WHERE m.id = p.id AND p.r % 20 = 0 AND p.canonical IS NOT NULL
  RETURNING m.id, p.canonical)
INSERT INTO engine.memory_history (user_id, action, result_id, source_ids)
SELECT :u, 'merge', canonical, ARRAY[id] FROM merged
""")

OTHERS = text("""
INSERT INTO engine.companion_memories (user_id, content, category, created_at)
SELECT gen_random_uuid(), 'someone else''s memory ' || g, 'fact', now()
  FROM generate_series(1, :n) g
""")


def load(engine: Engine, user: uuid.UUID, memories: int, others: int, dim: int) -> None:
    with engine.begin() as conn:
        conn.execute(TURNS, {"u": user})
        conn.execute(MEMORIES, {"u": user, "n": memories, "dim": dim, "turns": 200})
        conn.execute(MERGES, {"u": user})
        if others:
            conn.execute(OTHERS, {"n": others})
        conn.execute(text("UPDATE engine.companion_memories SET metadata ="
                          " '{\"guard_quarantine\": {\"reason\": \"secret\"}}'"
                          " WHERE status = 'quarantined'"))
    with engine.connect() as conn:
        conn.execute(text("ANALYZE"))


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def run(url: str, *, memories: int, others: int, repeats: int, size: int) -> dict[str, Any]:
    from starlette.testclient import TestClient

    from eros.ledger.app import create_app
    from eros.ledger.security import Keys
    from eros.ledger.services.ledger import playground
    from eros.ledger.web import Context
    from eros.providers import make_providers
    from eros.settings import load_settings

    settings = load_settings(database_url=url, eros_providers="offline",
                             eros_offline_embedder="hash")
    engine = create_engine(url, pool_size=5)
    user = uuid.uuid4()
    started = time.perf_counter()
    load(engine, user, memories, others, settings.embedding_dim)
    load_secs = time.perf_counter() - started
    _, embedder = make_providers(settings)
    token = "bench-token-" + "x" * 16
    app = create_app(Context(engine, settings, embedder, Keys.from_token(token),
                             lambda: {"url": "-", "embedded": False, "reachable": False}))
    auth = {"Authorization": f"Bearer {token}"}
    query = "hiking in the mountains"
    out: dict[str, Any] = {"memories": memories, "others": others, "repeats": repeats,
                           "page_size": size, "load_secs": round(load_secs, 1),
                           "machine": machine()}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        first = f"/users/{user}?size={size}"
        pages = -(-memories // size)
        last = f"{first}&page={pages}"
        for path, key in ((first, "first_page"), (last, "last_page")):
            for _ in range(3):
                client.get(path, headers=auth)
            times, body = [], b""
            for _ in range(repeats):
                t = time.perf_counter()
                res = client.get(path, headers=auth)
                times.append(time.perf_counter() - t)
                assert res.status_code == 200, res.status_code
                body = res.content
            out[key] = {"median_ms": _median_ms(times),
                        "p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))] * 1000, 2),
                        "bytes": len(body), "memories_shown": body.count(b'class="memory')}
        # the playground against the recall calls themselves, alternating
        recall_path = f"/users/{user}/recall?q={query.replace(' ', '+')}"
        for _ in range(3):
            client.get(recall_path, headers=auth)
            playground(engine, embedder, settings, user, query)
        page_t, recall_t = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            assert client.get(recall_path, headers=auth).status_code == 200
            page_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            played = playground(engine, embedder, settings, user, query)
            recall_t.append(played.recall_ms / 1000)
        out["playground"] = {"page_median_ms": _median_ms(page_t),
                             "recall_median_ms": _median_ms(recall_t),
                             "overhead_median_ms": round(_median_ms(page_t)
                                                         - _median_ms(recall_t), 2)}
    engine.dispose()
    return out


def report(r: dict[str, Any]) -> str:
    f, last, p = r["first_page"], r["last_page"], r["playground"]
    ratio = p["overhead_median_ms"] / p["recall_median_ms"] if p["recall_median_ms"] else 0.0
    return "\n".join([
        f"user with {r['memories']} memories (+{r['others']} of others), page size "
        f"{r['page_size']}, median of {r['repeats']}",
        "| what | median ms | p95 ms | bytes |",
        "|---|---|---|---|",
        f"| first page ({f['memories_shown']} memory cards: the page and the quarantined) "
        f"| {f['median_ms']} | {f['p95_ms']} | {f['bytes']} |",
        f"| last page ({last['memories_shown']} memory cards) | {last['median_ms']} | "
        f"{last['p95_ms']} | {last['bytes']} |",
        f"| recall playground page (3 strategies) | {p['page_median_ms']} | | |",
        f"| the 3 recall calls themselves | {p['recall_median_ms']} | | |",
        f"playground overhead {p['overhead_median_ms']} ms = {ratio:.2f}× the recall "
        f"(target ≤ 1×); first page target ≤ 300 ms: "
        f"{'met' if f['median_ms'] <= 300 else 'MISSED'}",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("EROS_PROVIDERS", "offline")
    with scratch_database() as url:
        result = run(url, memories=args.memories, others=args.others, repeats=args.repeats,
                     size=args.size)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
