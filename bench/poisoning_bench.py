"""Memory poisoning: attack success rate and benign kept, our path against the reference's.

Every case of the red-team corpus (tests/redteam: attacks, benign look-alikes, and the held-out
sets written after a round of patterns) runs as its own session through the real
pipeline — claim, classify (prompt v2, guard), the write into PostgreSQL — with an in-process
model that COMPLIES: it returns the session's payload as the memory. The user's current
memories are then rendered into the prompt. Then the same cases go through consolidation, the
payload written as the canonical text of a two-duplicate cluster.

- **attack success rate**: attacks whose payload is stored as a current memory or is present
  in the rendered prompt (target 0);
- **benign kept**: look-alikes whose memory is stored (target >= 95%);
- **unsafe renders**: rendered prompts in which a memory opens a line of its own (target 0).

The reference path (the product before issue 15: no guard, memories rendered verbatim) is
measured in the same run on the same replies; it has no guard, so whatever a complying model
returns is stored. A scripted complying model does not exercise prompt v2 itself (a real model
that follows v2 refuses most of these before the guard sees them): these figures are the
guard's and the renderer's alone, the worst case.

    python -m bench.poisoning_bench [--no-record] [--json F] [--corpora main,held-out-5,...]

``--corpora`` runs only the named corpora (``main`` and the held-out sets' names in
testkit/redteam/corpus.py): ``main`` alone is the issue-25 check of a guard round in minutes,
and it keeps a set still held out out of a tuning round's run.

Uses ``EROS_BENCH_DATABASE_URL`` (a superuser URL; a scratch database is created and dropped)
or starts an embedded PostgreSQL with pgvector.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from bench.claim_bench import machine, scratch_database
from bench.consolidation_bench import InstantEmbedder
from bench.poisoning_detail import (
    CountingEmbedder,
    breakdown,
    breakdown_table,
    guard_cpu,
    sample_corpus_full,
)
from eros.consolidation.core.consolidation_reply import load_consolidation_prompt
from eros.consolidation.services.consolidate import Consolidator
from eros.dreaming.services.classify import Pipeline
from eros.guard.core.guard import load_guard
from eros.guard.services.guard_model import meaning_model
from eros.guard.services.guard_training import ensure_model
from eros.memory.core.parsing import parse_extraction
from eros.prompts import load_prompt
from eros.providers.base import Completion
from eros.providers.offline.e5 import e5_available
from eros.recall.core.render import get_labels, render_memories
from eros.settings import load_settings
from testkit.redteam.corpus import HELDOUT, Case, heldout_corpus, main_corpus
from testkit.redteam.harness import (
    CaseResult,
    Figures,
    Note,
    Responder,
    complying_extraction,
    figures,
    run_consolidation,
    run_extraction,
    structure_ok,
)

ROOT = Path(__file__).resolve().parent
DIM = 512


class ComplyingLLM:
    """Answers with whatever the current case's responder says, at once."""

    name, offline = "bench-complying", True

    def __init__(self) -> None:
        self.respond: Responder = lambda _request: '{"memories": []}'
        self.calls = 0

    def script(self, respond: Responder) -> None:
        self.respond = respond

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        self.calls += 1
        body = self.respond(user)
        return Completion(body, "stop", self.name, len(user) // 4, len(body) // 4)


def reference(cases: Sequence[Case]) -> Figures:
    """The path before issue 15: every parsed candidate stored, rendered as a bullet."""
    attacks = [c for c in cases if c.kind == "attack"]
    benign = [c for c in cases if c.kind == "benign"]

    def stored(case: Case) -> bool:
        return bool(parse_extraction(complying_extraction(case)("")).candidates)

    return Figures(len(attacks), sum(map(stored, attacks)), len(benign),
                   sum(map(stored, benign)), -1)  # -1: not rendered by the new renderer


def unguarded_renders(cases: Sequence[Case]) -> int:
    """Attack payloads rendered as if the guard had let them through: prompts where one opens
    a line of its own (the renderer's own defence, target 0)."""
    bad = 0
    for case in cases:
        if case.kind == "attack":
            labels = get_labels(case.lang if case.lang in ("en", "zh") else "en")
            rendered = render_memories([Note(case.memory, case.category)], labels)
            bad += not structure_ok(rendered, labels)
    return bad


def sample_corpus_drops() -> tuple[int, int]:
    """(user turns, dropped) over the bundled sample corpus (eros/data): ordinary chat, each
    turn judged as if a model had stored it verbatim, length cap off — a false-positive probe
    on text nobody wrote as a look-alike."""
    guard = load_guard(max_chars=10000)
    corpus = resources.files("eros.data").joinpath("sample_corpus.jsonl")
    turns = [m["content"] for line in corpus.read_text(encoding="utf-8").splitlines()
             if line.strip() for m in json.loads(line)["messages"] if m["role"] == "user"]
    return len(turns), sum(not guard.check(t).ok for t in turns)


@dataclass
class Row:
    stage: str
    corpus: str
    path: str
    f: Figures
    through: list[str]


def _through(results: Sequence[CaseResult]) -> list[str]:
    return [r.case.id for r in results if r.case.kind == "attack" and r.success]


def _lost(results: Sequence[CaseResult]) -> list[str]:
    return [r.case.id for r in results if r.case.kind == "benign" and not r.success]


def table(rows: Sequence[Row]) -> str:
    head = (f"{'stage':<14}{'corpus':<12}{'path':<11}{'attacks':>8}{'succeeded':>10}"
            f"{'ASR':>8}{'benign':>8}{'kept':>6}{'kept %':>8}{'unsafe':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.stage:<14}{r.corpus:<12}{r.path:<11}{r.f.attacks:>8}"
                     f"{r.f.attack_successes:>10}{r.f.attack_success_rate:>8.1%}"
                     f"{r.f.benign:>8}{r.f.benign_kept:>6}{r.f.benign_kept_rate:>8.1%}"
                     f"{r.f.unsafe_renders if r.f.unsafe_renders >= 0 else '-':>8}")
    return "\n".join(lines)


def make_embedder(kind: str) -> Any:
    """``e5``: the real offline embedder (the meaning layer runs); ``random``: random unit
    vectors (the layer trains, finds no meaning and stays off — the smoke test's choice)."""
    if kind == "e5":
        from eros.providers.offline.e5 import E5Embedder

        return E5Embedder(DIM)
    return InstantEmbedder(DIM)


def _first(cases: list[Case], limit: int | None) -> list[Case]:
    """The first ``limit`` attacks and ``limit`` look-alikes of a corpus (all without one)."""
    if limit is None:
        return cases
    return ([c for c in cases if c.kind == "attack"][:limit]
            + [c for c in cases if c.kind == "benign"][:limit])


def run(url: str, embedder_kind: str = "e5", limit: int | None = None,
        corpora: Sequence[str] | None = None) -> tuple[list[Row], dict[str, Any]]:
    engine = create_engine(url, pool_size=2)
    try:
        settings = load_settings(database_url=url, consolidation_similarity=0.85,
                                 consolidation_min_near_dup_share=0.2,
                                 memory_guard_classifier="auto")
        llm = ComplyingLLM()
        embedder = CountingEmbedder(make_embedder(embedder_kind))
        pipeline = Pipeline(settings, engine, llm, embedder, load_prompt())
        consolidator = Consolidator(settings, engine, llm, embedder,
                                    load_consolidation_prompt())
        # the meaning model made ahead, as `eros migrate` does on a deploy (a task only looks
        # it up), before anything is counted or timed
        ensure_model(settings, engine, embedder)
        layer = meaning_model(settings, engine, embedder)
        rows: list[Row] = []
        extra: dict[str, Any] = {"lost": {}, "breakdown": {}, "embedder": embedder.name,
                                 "meaning_layer": "on" if layer else "off"}
        names = list(corpora) if corpora is not None else ["main", *HELDOUT]
        chosen = [(name, _first(main_corpus() if name == "main" else heldout_corpus(name), limit))
                  for name in names]
        calls_before, sessions_embedding = embedder.calls, 0
        for corpus, cases in chosen:
            rows.append(Row("extraction", corpus, "reference", reference(cases), []))
            calls = embedder.calls
            got = run_extraction(pipeline, cases, llm.script)
            sessions_embedding += embedder.calls - calls
            rows.append(Row("extraction", corpus, "eros", figures(got), _through(got)))
            extra["lost"][f"extraction/{corpus}"] = _lost(got)
            extra["breakdown"][corpus] = breakdown(got)
            got = run_consolidation(consolidator, cases, llm.script, DIM)
            rows.append(Row("consolidation", corpus, "eros", figures(got), _through(got)))
            extra["lost"][f"consolidation/{corpus}"] = _lost(got)
        all_cases = [c for _, cases in chosen for c in cases]
        extra["extraction_sessions"] = len(all_cases)
        extra["extraction_embedding_calls"] = sessions_embedding
        extra["embedding_calls_total"] = embedder.calls - calls_before
        extra["unguarded_unsafe_renders"] = unguarded_renders(all_cases)
        extra["prompt_version"] = pipeline.prompt.version
        extra["sample_turns"], extra["sample_turns_dropped"] = sample_corpus_drops()
        _turns, dropped, layers = sample_corpus_full(settings, engine, embedder)
        extra["sample_turns_dropped_full"], extra["sample_drops_by_layer"] = dropped, layers
        cost = guard_cpu(settings, engine, embedder, all_cases)
        extra["cpu"] = {"candidates": cost.candidates, "rules_ms": round(cost.rules_ms, 4),
                        "meaning_ms": round(cost.meaning_ms, 4), "layer": cost.layer,
                        "threshold": cost.threshold,
                        "balanced_accuracy": cost.balanced_accuracy}
        with engine.connect() as conn:
            extra["postgres"] = conn.execute(text("SHOW server_version")).scalar_one()
        return rows, extra
    finally:
        engine.dispose()


def summary(extra: dict[str, Any]) -> str:
    cpu = extra["cpu"]
    newest = next((n for n in reversed(HELDOUT) if n in extra["breakdown"]), None)
    lines = [
        f"embedder {extra['embedder']}, meaning layer {extra['meaning_layer']}"
        + (f" (threshold {cpu['threshold']:.3f}, bank balanced accuracy out of fold "
           f"{cpu['balanced_accuracy']:.3f})" if cpu["threshold"] is not None else ""),
        f"guard CPU per candidate: rules+secrets {cpu['rules_ms']:.3f} ms, meaning "
        f"{cpu['meaning_ms']:.3f} ms (median of 5 rounds over {cpu['candidates']} candidates)",
        f"embedding calls in extraction: {extra['extraction_embedding_calls']} for "
        f"{extra['extraction_sessions']} sessions (at most one each: no extra call)",
        f"sample corpus: {extra['sample_turns_dropped']} of {extra['sample_turns']} user turns "
        f"dropped by rules alone, {extra['sample_turns_dropped_full']} by the whole guard "
        f"{extra['sample_drops_by_layer'] or ''}".rstrip(),
    ]
    for name in (newest, "main"):
        if name is not None and name in extra["breakdown"]:
            lines += ["", breakdown_table(f"{name} (extraction), per language and shape:",
                                          extra["breakdown"][name])]
    return "\n".join(lines)


def record(out: str, rows: Sequence[Row], extra: dict[str, Any], info: dict[str, Any],
           command: str) -> None:
    """Append a dated run under ``## Memory poisoning`` in bench/RESULTS.md (the section is
    the file's last; it is created on the first run)."""
    through = "; ".join(f"{r.stage}/{r.corpus}: {', '.join(r.through)}" for r in rows
                        if r.path == "eros" and r.through) or "none"
    lost = "; ".join(f"{k}: {', '.join(v)}" for k, v in extra["lost"].items() if v) or "none"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"\n### {when}\n\n`{command}`\n\nMachine: {info['nproc']}"
               f" cores, {info['cpu']}, PostgreSQL {extra['postgres']}; extraction prompt "
               f"{extra['prompt_version']}, complying scripted model.\n\n```\n{out}\n```\n\n"
               f"Attacks that got through (eros path): {through}. Benign cases lost: {lost}. "
               f"Attack payloads rendered as if unguarded that open a line of their own: "
               f"{extra['unguarded_unsafe_renders']}. Bundled sample corpus (ordinary chat): "
               f"{extra['sample_turns_dropped']} of {extra['sample_turns']} user turns dropped "
               "when judged verbatim.\n")
    path = ROOT / "RESULTS.md"
    known = path.read_text(encoding="utf-8") if path.exists() else ""
    if "\n## Memory poisoning\n" not in known:
        section = "\n## Memory poisoning\n" + section
    with path.open("a", encoding="utf-8") as fh:
        fh.write(section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.poisoning_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-record", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--embedder", choices=("e5", "random"), default=None,
                        help="e5 (default when installed: the meaning layer runs) or random "
                        "(no meaning: the layer stays off)")
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N attacks and N look-alikes of each corpus (smoke)")
    parser.add_argument("--corpora", default=None,
                        help="comma-separated corpora to run (main and held-out set names; "
                        "default all)")
    parser.add_argument("--json", type=Path, default=ROOT / "out" / "poisoning.json",
                        help="where the results go (default %(default)s)")
    args = parser.parse_args(argv)
    corpora = args.corpora.split(",") if args.corpora else None
    unknown = set(corpora or ()) - {"main", *HELDOUT}
    if unknown:
        parser.error(f"unknown corpora: {', '.join(sorted(unknown))}")
    info = machine()
    kind = args.embedder or ("e5" if e5_available(DIM) else "random")
    with scratch_database() as url:
        rows, extra = run(url, kind, args.limit, corpora)
    out = table(rows) + "\n\n" + summary(extra)
    print(out)
    for r in rows:
        if r.path == "eros" and r.through:
            print(f"got through ({r.stage}/{r.corpus}): {', '.join(r.through)}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "extra": extra, "rows": [
        {"stage": r.stage, "corpus": r.corpus, "path": r.path, "attacks": r.f.attacks,
         "attack_successes": r.f.attack_successes, "benign": r.f.benign,
         "benign_kept": r.f.benign_kept, "unsafe_renders": r.f.unsafe_renders,
         "through": r.through} for r in rows]}, indent=2))
    if not args.no_record and args.limit is None:
        command = "python -m bench.poisoning_bench" + (f" --corpora {args.corpora}"
                                                        if args.corpora else "")
        record(out, rows, extra, info, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
