"""How much of the exact top 50 / top 10 the turn search keeps, on real e5 vectors (issue 31's
cost: the pre-scan's pool, centred sketches and cells must not cost recall quality):
``python -m bench.turn_prescan_quality --suite locomo10.json [--conversations 3]
[--queries 500] [--pools 200,300,400,1000]``.

The turns of the first N LoCoMo conversations are indexed under one user (e5 vectors, through
``turns_sql.write_turns`` as the product writes them), their observations written as that user's
memories; the LoCoMo questions of those conversations are the queries. For each variant —
sketches uncentred or centred on the model's mean (``turn_centres``), all turns read or only the
probed cells (the user clustered as beat does: ``recall_cells.cluster_user``; ``--shares``, by
default RECALL_CELL_PROBE_SHARE, of the cells) — and each pool, ``turns_sql.nearest_turns``'
top 50 and top 10 are compared with the exact ones (every turn ranked by cosine in SQL).
Vectors come from the eval's embedding cache (``eros eval --cache``'s file; embedded and stored
there when missing). Uses
``EROS_BENCH_DATABASE_URL`` or an embedded PostgreSQL; prints a table, records nothing. No text
is printed. ``--smoke``: a hash embedder and a few turns (the test suite's seconds-long run).
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, text

from bench.claim_bench import scratch_database
from eros.recall.db import turns_sql
from eros.recall.services import recall_cells, turn_centres
from eros.settings import load_settings

DIM = 512
TOP = 50


def read_suite(path: Path, conversations: int) -> tuple[list[str], list[str], list[str]]:
    """The turns, observations and questions of the first ``conversations`` of a LoCoMo file."""
    data = json.loads(path.read_text())[:conversations]
    turns, notes, questions = [], [], []
    for sample in data:
        conv = sample["conversation"]
        for key, value in conv.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [t["text"] for t in value if t.get("text")]
        for obs in sample.get("observation", {}).values():
            for items in obs.values():
                notes += [x[0] for x in items if x and x[0]]
        questions += [q["question"] for q in sample["qa"] if q.get("question")]
    return turns, notes, questions


def embedder(smoke: bool) -> Any:
    """e5 through the eval's cache (the hash embedder for ``--smoke``)."""
    from eros.providers.offline import make_offline_embedder

    if smoke:
        return make_offline_embedder(DIM, "hash")
    from eros.devstack.embedded import data_dir
    from eros.evaluation.db.eval_cache import VectorCache
    from eros.evaluation.services.cached_embedder import CachedEmbedder

    return CachedEmbedder(make_offline_embedder(DIM, "e5"),
                          VectorCache(data_dir() / "eval-embeddings.sqlite3"))


def _embed(emb: Any, texts: list[str], kind: str) -> np.ndarray:
    out: list[list[float]] = []
    for start in range(0, len(texts), 256):
        out += emb.embed(texts[start:start + 256], input_type=kind).vectors
    return np.asarray(out, dtype=np.float32).reshape(len(texts), DIM)


def load(url: str, user: uuid.UUID, turn_v: np.ndarray, note_v: np.ndarray, model: str) -> None:
    engine = create_engine(url)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        sid = uuid.uuid4()
        conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at)"
                          " VALUES (:s, :u, now())"), {"s": sid, "u": user})
        seqs = [int(r[0]) for r in conn.execute(text(
            "INSERT INTO engine.chat_messages (session_id, role, content, sent_at)"
            " SELECT :s, 'user', 'turn ' || g, now() FROM generate_series(1, :n) g"
            " RETURNING seq"), {"s": sid, "n": len(turn_v)})]
        turns_sql.write_turns(conn, [
            turns_sql.TurnRow(seq, sid, user, None, now - timedelta(hours=i), v.tolist(), model)
            for i, (seq, v) in enumerate(zip(seqs, turn_v, strict=True))])
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, importance,"
            " embedding, embedding_model) VALUES (:u, :c, 'fact', 0.5, CAST(:v AS vector), :m)"),
            [{"u": user, "c": f"note {i}", "v": str(v.tolist()), "m": model}
             for i, v in enumerate(note_v)])
    engine.dispose()


def overlap(engine: Any, user: uuid.UUID, queries: np.ndarray, model: str, pool: int,
            share: float) -> tuple[float, float]:
    """Mean share of the exact top 50 and top 10 that ``nearest_turns`` returns."""
    exact_sql = text("SELECT seq FROM engine.memory_turns WHERE user_id = :u"
                     " ORDER BY embedding <=> CAST(:q AS halfvec), seq LIMIT :k")
    at50, at10 = [], []
    with engine.connect() as conn:
        for q in queries:
            exact = [int(r[0]) for r in conn.execute(exact_sql, {"u": user, "q": str(q.tolist()),
                                                                 "k": TOP})]
            got = [t.seq for t in turns_sql.nearest_turns(
                conn, user, None, q.tolist(), TOP, True, pool=pool, embedding_model=model,
                probe_share=share)]
            at50.append(len(set(got) & set(exact)) / max(1, len(exact)))
            at10.append(len(set(got[:10]) & set(exact[:10])) / max(1, min(10, len(exact))))
    return float(np.mean(at50)), float(np.mean(at10))


def run(suite: Path | None, conversations: int, queries: int, pools: list[int],
        smoke: bool = False, shares: list[float] | None = None) -> dict[str, Any]:
    if smoke:
        rng = np.random.default_rng(0)
        turns = [f"turn {i} {rng.integers(1000)}" for i in range(300)]
        notes = [f"note {i} {rng.integers(1000)}" for i in range(120)]
        questions = [f"question {i}" for i in range(10)]
    else:
        assert suite is not None
        turns, notes, questions = read_suite(suite, conversations)
    emb = embedder(smoke)
    turn_v, note_v = _embed(emb, turns, "document"), _embed(emb, notes, "document")
    pick = np.random.default_rng(31).permutation(len(questions))[:queries]
    query_v = _embed(emb, [questions[i] for i in sorted(pick)], "query")
    mean = turn_v[:, :384].mean(axis=0) if not smoke else turn_v.mean(axis=0)
    out: dict[str, Any] = {"turns": len(turns), "notes": len(notes), "queries": len(query_v),
                           "model": emb.name, "turn_mean_norm": round(float(
                               np.linalg.norm(mean)), 3), "rows": []}
    user = uuid.UUID(int=31)  # fixed: the clustering is seeded by the user id
    with scratch_database() as url:
        load(url, user, turn_v, note_v, emb.name)
        settings = load_settings(database_url=url, embedding_dim=DIM)
        engine = create_engine(url)
        cells = recall_cells.cluster_user(engine, settings, user).cells
        out["cells"] = cells
        reads = [1.0, *(shares or [settings.recall_cell_probe_share])]
        for centred in (False, True):
            if centred:
                with engine.begin() as conn:
                    from eros.recall.db import turn_cells_sql
                    turn_cells_sql.set_centre(conn, emb.name, turn_centres.SAMPLE)
                turn_centres.resketch(engine, emb.name)
            for share in reads:
                for pool in pools:
                    o50, o10 = overlap(engine, user, query_v, emb.name, pool, share)
                    out["rows"].append({"centred": centred, "share": share, "pool": pool,
                                        "top50": round(100 * o50, 1),
                                        "top10": round(100 * o10, 1)})
        engine.dispose()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", type=Path, default=None)
    p.add_argument("--conversations", type=int, default=3)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--pools", default="200,300,400,1000")
    p.add_argument("--shares", default=None,
                   help="probe shares of the cells to measure besides reading every turn"
                        " (default: RECALL_CELL_PROBE_SHARE)")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if not args.smoke and args.suite is None:
        p.error("--suite is required (or --smoke)")
    result = run(args.suite, args.conversations, args.queries,
                 [int(x) for x in args.pools.split(",")], smoke=args.smoke,
                 shares=[float(x) for x in args.shares.split(",")] if args.shares else None)
    print(f"{result['turns']} turns, {result['notes']} memories in {result['cells']} cells, "
          f"{result['queries']} queries, model "
          f"{result['model']}, turn mean norm {result['turn_mean_norm']}")
    print(f"{'sketch':<10} {'cells read':<11} {'pool':>6} {'top-50':>8} {'top-10':>8}")
    for r in result["rows"]:
        print(f"{'centred' if r['centred'] else 'plain':<10} "
              f"{'all' if r['share'] >= 1 else r['share']:<11} {r['pool']:>6} {r['top50']:>7}% "
              f"{r['top10']:>7}%")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
