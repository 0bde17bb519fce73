"""What the seq trigger (migration 0009) costs the chat product per turn written.

Since issue 16 a BEFORE INSERT row trigger locks the turn's session row and draws its ``seq``
under that lock (``chat_sessions.last_seq``), so per session seq order is commit order. The
baseline is the same database with that trigger disabled (the write path before 0009: identity
default plus the statement-level touch trigger), measured in the same run.

Per shape, ``--turns`` turns over ``--sessions`` sessions: ``single`` = one autocommitted
INSERT per turn (a product writing each turn as it arrives); ``batch`` = one INSERT of 10 turns
per statement. Times are client-side wall time per turn.

    python -m bench.turn_write_bench [--turns 5000] [--sessions 100] [--repeats 3]

Uses ``EROS_BENCH_DATABASE_URL`` or an embedded PostgreSQL (see bench/claim_bench.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, text

from bench.claim_bench import machine, scratch_database

TURN = text("INSERT INTO engine.chat_messages (session_id, role, content)"
            " VALUES (:sid, 'user', :content)")
TOGGLE = "ALTER TABLE engine.chat_messages {} TRIGGER chat_messages_assign_seq"


def _sessions(engine: Engine, count: int) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in range(count)]
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id) VALUES (:id, :u)"),
                     [{"id": i, "u": uuid.uuid4()} for i in ids])
    return ids


def _write(engine: Engine, ids: list[uuid.UUID], turns: int, per_statement: int) -> float:
    """Seconds per turn for ``turns`` turns, ``per_statement`` rows per autocommitted INSERT."""
    started = time.perf_counter()
    with engine.connect() as conn:
        for n in range(0, turns, per_statement):
            rows = [{"sid": ids[(n + i) % len(ids)], "content": f"turn {n + i}"}
                    for i in range(min(per_statement, turns - n))]
            conn.execute(TURN, rows if per_statement > 1 else rows[0])
            conn.commit()
    return (time.perf_counter() - started) / turns


def run(url: str, *, turns: int, sessions: int, repeats: int) -> list[dict[str, Any]]:
    engine = create_engine(url, pool_size=2)
    ids = _sessions(engine, sessions)
    rows = []
    for shape, per in (("single", 1), ("batch", 10)):
        times: dict[str, list[float]] = {"ours": [], "baseline": []}
        for _ in range(repeats):
            # interleaved, so drift hits both alike; ours last, so the check below holds
            for side in ("baseline", "ours"):
                with engine.begin() as conn:
                    conn.execute(text(TOGGLE.format(
                        "ENABLE" if side == "ours" else "DISABLE")))
                times[side].append(_write(engine, ids, turns, per) * 1e6)
        with engine.begin() as conn:
            conn.execute(text(TOGGLE.format("ENABLE")))
            in_order = conn.execute(text(
                "SELECT bool_and(s.last_seq >= m.top) FROM engine.chat_sessions s JOIN"
                " (SELECT session_id, max(seq) AS top FROM engine.chat_messages"
                "  GROUP BY session_id) m ON m.session_id = s.id")).scalar()
        rows.append({"shape": shape, "turns": turns, "sessions": sessions,
                     "ours_us": statistics.median(times["ours"]),
                     "baseline_us": statistics.median(times["baseline"]),
                     "last_seq_covers_turns": bool(in_order)})
    engine.dispose()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'shape':<8}{'turns':>8}{'sessions':>10}{'ours µs/turn':>15}"
             f"{'baseline µs/turn':>19}{'ratio':>8}", "-" * 68]
    for r in rows:
        lines.append(f"{r['shape']:<8}{r['turns']:>8,}{r['sessions']:>10,}{r['ours_us']:>15.1f}"
                     f"{r['baseline_us']:>19.1f}{r['ours_us'] / r['baseline_us']:>8.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.turn_write_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the results here as well")
    args = parser.parse_args(argv)
    with scratch_database() as url:
        rows = run(url, turns=args.turns, sessions=args.sessions, repeats=args.repeats)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
