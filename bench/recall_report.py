"""Reporting of the recall benchmark: samples, the results table, the RESULTS.md entry."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eros.recall.services.recall_cells import ClusterReport

ROOT = Path(__file__).resolve().parent


@dataclass
class Samples:
    times: list[float] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    plans: Counter[str] = field(default_factory=Counter)
    quality: list[float] = field(default_factory=list)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def table(groups: dict[str, dict[str, Samples]]) -> str:
    lines = ["| users | method | median ms | p99 ms | median / ref | p99 / ref | rows |"
             " plans | recall vs exact |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for group, samples in groups.items():
        ref = samples["reference"]
        ref_med, ref_p99 = statistics.median(ref.times), _p99(ref.times)
        for method, s in samples.items():
            med, p99 = statistics.median(s.times), _p99(s.times)
            plans = ", ".join(f"{k} {v}" for k, v in sorted(s.plans.items()))
            q = f"{statistics.mean(s.quality):.3f}" if s.quality else "–"
            lines.append(f"| {group} | {method} | {med:.2f} | {p99:.2f} | {med / ref_med:.2f} |"
                         f" {p99 / ref_p99:.2f} | {statistics.mean(s.rows):.1f} | {plans} |"
                         f" {q} |")
    return "\n".join(lines)


def summary(groups: dict[str, dict[str, Samples]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The table's figures as data (``--json``): per group and method."""
    return {group: {method: {
        "queries": len(s.times), "median_ms": round(statistics.median(s.times), 3),
        "p99_ms": round(_p99(s.times), 3), "rows_mean": round(statistics.mean(s.rows), 2),
        "plans": dict(s.plans),
        "quality": round(statistics.mean(s.quality), 4) if s.quality else None}
        for method, s in samples.items()} for group, samples in groups.items()}


def write_results(command: str, info: dict[str, Any], body: str) -> None:
    """Append under ``## Recall`` in bench/RESULTS.md (other benchmarks own other sections)."""
    path = ROOT / "RESULTS.md"
    existing = path.read_text() if path.exists() else "# Benchmark results\n"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    entry = (f"\n### {stamp}\n\n`{command}`\n\nmachine: {info['nproc']} × {info['cpu']}, "
             f"{info['ram_gib']} GiB RAM; PostgreSQL {info.get('postgres', '?')}, pgvector "
             f"{info.get('pgvector', '?')}, shared_buffers {info.get('shared_buffers', '?')}; "
             f"while measuring, all processes kept {info.get('busy_cores', '?')} of "
             f"{info['nproc']} cores busy (this benchmark and its server use about one)"
             f"\n\n{body}\n")
    if "\n## Recall\n" not in existing:
        existing = existing.rstrip("\n") + "\n\n## Recall\n"
        path.write_text(existing + entry)
        return
    head, tail = existing.split("\n## Recall\n", 1)
    nxt = tail.find("\n## ")
    section, rest = (tail, "") if nxt < 0 else (tail[:nxt], tail[nxt:])
    path.write_text(head + "\n## Recall\n" + section.rstrip("\n") + "\n" + entry + rest)


def upgraded(timings: dict[str, float]) -> str:
    up = timings.get("upgrade_s")
    return f"; the kept database of an older schema upgraded in place in {up:.0f} s" if up else ""


def clustered_sentence(reports: list[ClusterReport]) -> str:
    """One sentence: who was clustered and what each step cost."""
    done = [r for r in reports if r.outcome == "clustered"]
    if not done:
        return "No user clustered."
    per = ", ".join(f"{r.rows:,} rows → {r.cells} cells in "
                    f"{(r.read_ms + r.cluster_ms + r.write_ms) / 1000:.1f} s"
                    for r in sorted(done, key=lambda r: r.rows))
    return f"Clustered {len(done)} users (read + k-means + write): {per}."
