"""How bench/consolidation_bench.py prints and records its rows: the table, the first pass
against its bound, the section appended to bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent


def table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'memories':>9} | {'old read ms':>11} {'old clust ms':>12} | {'pairs found':>16}"
            f" | {'first pass db ms':>17} {'(read + write)':>19} {'passes':>6}"
            f" {'max txn ms':>10} {'search':>9}"
            f" | {'bulk first pass db ms':>21} {'(bulk + read + write)':>22} {'max txn':>7}"
            f" {'same':>4}"
            f" | {'incr db ms':>10} {'old incr ms':>11} | {'finder ms (all/20 new)':>22}")
    lines = [head, "-" * len(head)]
    for r in rows:
        f, i = r["first"], r["incremental"]
        old = (f"{r['old_read_ms']:>11.1f} {r['old_cluster_ms']:>12.1f}" if "old_read_ms" in r
               else f"{'-':>11} {'-':>12}")
        old_inc = (f"{r['old_incremental_read_ms'] + r['old_incremental_cluster_ms']:>11.1f}"
                   if "old_incremental_read_ms" in r else f"{'-':>11}")
        pairs = (f"{r['found_pairs']}/{r['exact_pairs']} {100 * r['pairs_recall']:.1f}%"
                 + ("*" if "pairs_sample" in r else "") if "pairs_recall" in r else "-")
        first = (f"{f['db_ms']:.1f}" if r["full"]
                 else f"~{f['db_ms_whole']:.0f} (1 chunk)")
        split = f"{f.get('read_ms', 0.0):.0f} + {f.get('write_ms', 0.0):.0f}"
        b = r["bulk"]
        bulk = (f" | {b['db_ms']:>21.1f} {_bulk_split(b):>22} {b['max_txn_ms']:>7.0f}"
                f" {_same(b):>4}")
        lines.append(
            f"{r['size']:>9,} | {old} | {pairs:>16} | {first:>17} {split:>19} {f['passes']:>6}"
            f" {f['max_txn_ms']:>10.1f} {f['search']:>9}{bulk} | {i['db_ms']:>10.1f} {old_inc}"
            f" | {r['finder_backlog_all_ms']:>10.1f} / {r['finder_backlog_20_ms']:<9.1f}")
    return "\n".join(lines)


#: issue 34's bound on a first pass (stated for a 50k-memory user): 10 s of database work.
FIRST_PASS_BOUND_MS = 10_000.0


def bound_line(rows: list[dict[str, Any]]) -> str:
    """The bulk first pass of each size as a ratio to the bound (≤ 1 meets it at 50k)."""
    return ("bulk first pass / 10 s bound (issue 34, at 50k): " + ", ".join(
        f"{r['size']:,}: {r['bulk']['bound_ratio']:.2f}x" for r in rows))


def _bulk_split(b: dict[str, Any]) -> str:
    return (f"{b['bulk_read_ms']:.0f} + {b['read_ms']:.0f} + {b['write_ms']:.0f}"
            if b["bulk"] else f"(not due) {b['read_ms']:.0f} + {b['write_ms']:.0f}")


def _same(b: dict[str, Any]) -> str:
    return "-" if "same_decisions" not in b else "yes" if b["same_decisions"] else "NO"


def record(text_table: str, info: dict[str, Any], command: str) -> None:
    """Append under ``## Consolidation at scale`` in bench/RESULTS.md."""
    path = ROOT / "RESULTS.md"
    section = (f"\n## Consolidation at scale (issue 17)\n\n`{command}`\n\nMachine: "
               f"{info['nproc']} cores, {info['cpu']}, {info['ram_gib']} GiB RAM, PostgreSQL "
               f"{info['postgres']} (shared_buffers {info['shared_buffers']}); shared with "
               f"other benchmarks running at the same time.\n\n```\n{text_table}\n```\n")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(section)
