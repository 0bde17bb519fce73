#!/usr/bin/env python3
"""Capture ``fused``'s inputs once, re-fuse variants in seconds (issue 31, fourth round).

``--capture FILE`` replays a suite ONCE (as :mod:`bench.fusion_dev` does), asks ``fused``
through the production recall with :func:`eros.recall.services.recall_fused.fuse` wrapped to
record its inputs per call (the production call and the eval's long list), and pickles them
with what scoring needs (each user's turns, the turn ids each memory covers, the baseline's
exact figures). ``--load FILE --variant name:field=value,...`` then re-fuses every question
with :func:`eros.recall.core.fusion.fuse` under the variant's FusionParams (and settings) and
scores it as ``eros eval`` scores (:func:`eros.evaluation.core.exact.coverage`) — no database,
no embedder. A development tool: it refuses the held-out set.

    python -m bench.fusion_capture --suite /tmp/locomo10.json --format locomo --users 6 \\
        --capture bench/out/heur6.pkl
    python -m bench.fusion_capture --load bench/out/heur6.pkl --variant shipped: \\
        --variant nolex:lexical_weight=0

A variant with ``turns=0`` ranks the captured memory pool alone (``fused``'s own memory
order: the memory-only answer of the same pool, question by question); ``--budgets`` adds
token budgets below the eval's (the development sets are met at 500 tokens, and a budget
tighter than a small user's pool shows what the head of a list costs); ``--tokens`` prints,
per question, the tokens each variant spends before its evidence; ``--shares`` where the
shipped list's first 500 tokens go (the turns' share, each kind's length).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.fusion_dev import _value, replayed
from eros.evaluation.core.exact import BUDGETS, KS


def _variant(text: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.partition(":")
    pairs = [p.split("=", 1) for p in rest.split(",") if p]
    return name, {k.strip(): _value(v.strip()) for k, v in pairs}


def capture(args: argparse.Namespace) -> int:
    from eros.evaluation.core.formats import convert
    from eros.evaluation.core.scoring import aggregate
    from eros.evaluation.core.suite import shipped_suite
    from eros.evaluation.services import asking
    from eros.evaluation.services.run import ask
    from eros.recall.services import recall_fused

    suite = (convert(json.loads(Path(args.suite).read_text(encoding="utf-8")), args.format)
             if args.suite else shipped_suite()).subset(args.users)
    calls: list[dict[str, Any]] = []
    users: dict[str, Any] = {}
    real_fuse = recall_fused.fuse  # type: ignore[attr-defined]
    real_user_data = asking._user_data

    def recording_fuse(memories, turns, **kw):  # type: ignore[no-untyped-def]
        calls.append({"memories": list(memories), "turns": list(turns),
                      "stale": frozenset(kw.get("stale", ())),
                      "lifted": list(kw.get("lifted", ())),
                      "query_text": kw.get("query_text"), "now": kw["params"].now})
        return real_fuse(memories, turns, **kw)

    def recording_user_data(engine, user, embedder, judge):  # type: ignore[no-untyped-def]
        data, tokens = real_user_data(engine, user, embedder, judge)
        users[user.id] = data
        return data, tokens

    recall_fused.fuse = recording_fuse  # type: ignore[attr-defined]
    asking._user_data = recording_user_data  # type: ignore[assignment]
    with replayed(suite, args.extractor) as (engine, settings, embedder, judge):
        scored, _ = ask(engine, settings, suite, embedder, judge,
                        strategies=("grouped", "composite", "fused"))
    cells = aggregate(scored)
    # ask_user asks the questions of each user in suite order, each with two fused calls
    by_user = defaultdict(list)
    for q in suite.questions:
        by_user[q.user].append(q)
    ordered = [q for user in suite.users for q in by_user.get(user.id, [])]
    assert len(calls) == 2 * len(ordered), (len(calls), len(ordered))
    questions = [{"id": q.id, "user": q.user, "type": q.type, "evidence": list(q.evidence_turns),
                  "short": calls[2 * i], "wide": calls[2 * i + 1]}
                 for i, q in enumerate(ordered)]
    reference = {system: {kind: (c.questions, c.recall_at, c.recall_within)
                          for kind, c in kinds.items()} for system, kinds in cells.items()}
    Path(args.capture).parent.mkdir(parents=True, exist_ok=True)
    with open(args.capture, "wb") as f:
        pickle.dump({"suite": suite.name, "questions": questions, "users": users,
                     "reference": reference, "settings": settings.model_dump()}, f)
    for system, kinds in reference.items():
        for kind, (n, at, within) in sorted(kinds.items()):
            print(_line(f"{system} {kind}", n, at, within))
    print(f"# captured {len(questions)} questions into {args.capture}")
    return 0


def _line(label: str, n: int, at: Any, within: Any) -> str:
    figures = "".join(f"  {'—' if v is None else f'{100 * v:5.1f}%':>6}"
                      for v in (*(at or (None,) * 3), *(within or (None,) * 3)))
    return f"{label:<36}{n:>5}{figures}"


def load(args: argparse.Namespace) -> int:
    from eros.evaluation.core.exact import coverage, covering_level, tokens_at
    from eros.evaluation.services.asking import ASK_K, _items
    from eros.recall.core.fusion import fuse
    from eros.recall.core.render_fused import within_budget
    from eros.recall.services.recall_fused import fusion_params, item_tokens, recalled
    from eros.settings import Settings

    with open(args.load, "rb") as f:
        cap = pickle.load(f)
    base = Settings.model_validate({k: v for k, v in cap["settings"].items()
                                    if v is not None})
    budgets = tuple(sorted(set(BUDGETS) | set(args.budgets)))
    head = f"{'variant':<36}{'n':>5}" + "".join(f"  {f'r@{k}':>6}" for k in KS) \
        + "".join(f"  {f'≤{b}t':>6}" for b in budgets)
    print(head)
    for system in ("baseline", "grouped", "composite", "fused"):
        for kind in args.kinds:
            if kind in cap["reference"].get(system, {}):
                n, at, within = cap["reference"][system][kind]
                print(_line(f"[captured] {system} {kind}", n, at, within))
    spent: dict[str, dict[str, int | None]] = defaultdict(dict)
    for name, overrides in (_variant(v) for v in args.variant or ["shipped:"]):
        fields = {k: v for k, v in overrides.items()
                  if not k.startswith("recall_") and k != "turns"}
        with_turns = overrides.get("turns", 1) != 0
        cfg = base.model_copy(update={k: v for k, v in overrides.items()
                                      if k.startswith("recall_")})
        cost = item_tokens(cfg)
        hits: dict[str, list[tuple[tuple[bool, ...], tuple[bool, ...]]]] = defaultdict(list)
        t = time.perf_counter()
        for q in cap["questions"]:
            data = cap["users"][q["user"]]
            answers = []
            for which in ("short", "wide"):
                c = q[which]
                params = replace(fusion_params(cfg, c["now"]), **fields)
                turns = c["turns"] if with_turns else []
                items = fuse(c["memories"], turns, k=len(c["memories"]) + len(turns),
                             params=params, stale=c["stale"], lifted=c["lifted"],
                             query_text=c["query_text"], cost=cost)
                if which == "short":
                    items = within_budget(items, cfg.recall_token_budget, cost, limit=cfg.recall_k)
                else:
                    items = within_budget(items, 100_000, cost, limit=ASK_K)
                answers.append(_items(recalled(items), data, False))
            if not q["evidence"]:
                continue
            short = coverage(q["evidence"], answers[0], grouped=False)
            wide = coverage(q["evidence"], answers[1], grouped=False, budgets=budgets)
            level = covering_level(q["evidence"], answers[1])
            spent[q["id"]][name] = None if level is None else tokens_at(answers[1], level)
            at = tuple(s if k <= cfg.recall_k else w
                       for k, s, w in zip(KS, short.at_k, wide.at_k, strict=True))
            hits[q["type"]].append((at, wide.within))
            hits["all"].append((at, wide.within))
        for kind in args.kinds:
            rows = hits.get(kind, [])
            if not rows:
                continue
            n = len(rows)
            at = [sum(r[0][i] for r in rows) / n for i in range(len(KS))]
            within = [sum(r[1][i] for r in rows) / n for i in range(len(budgets))]
            print(_line(f"{name} {kind}", n, at, within))
        print(f"# {name}: {time.perf_counter() - t:.1f}s {overrides}", flush=True)
    if args.tokens:
        names = [_variant(v)[0] for v in args.variant or ["shipped:"]]
        print("# tokens before the evidence: question " + " ".join(names))
        for qid, by in spent.items():
            if len({by.get(n) for n in names}) > 1:
                print(qid, " ".join(str(by.get(n)) for n in names))
    return 0


def shares(args: argparse.Namespace) -> int:
    """Where the shipped ``fused`` list's first 500 tokens go: the turns' share of them, each
    kind's tokens a line, the turns that lead the list (is it the turns that crowd a small
    budget?), counted as the eval counts an item."""
    import statistics

    from eros.evaluation.services.asking import ASK_K, _bullet_tokens
    from eros.recall.core.fusion import fuse
    from eros.recall.core.fusion_intent import is_question
    from eros.recall.core.render_fused import within_budget
    from eros.recall.services.recall_fused import fusion_params, item_tokens
    from eros.settings import Settings

    with open(args.load, "rb") as f:
        cap = pickle.load(f)
    cfg = Settings.model_validate({k: v for k, v in cap["settings"].items() if v is not None})
    cost = item_tokens(cfg)
    sizes: dict[str, list[int]] = {"turn": [], "memory": []}
    share, leading, remarks = [], [], 0
    for q in cap["questions"]:
        c = q["wide"]
        remarks += not is_question(c["query_text"])
        items = within_budget(fuse(c["memories"], c["turns"],
                                   k=len(c["memories"]) + len(c["turns"]),
                                   params=fusion_params(cfg, c["now"]), stale=c["stale"],
                                   lifted=c["lifted"], query_text=c["query_text"], cost=cost),
                              100_000, cost, limit=ASK_K)
        spent = on_turns = 0
        for item in items:
            tokens = _bullet_tokens(item.content)
            sizes[item.kind].append(tokens)
            if spent + tokens > 500:
                break
            spent += tokens
            on_turns += tokens if item.kind == "turn" else 0
        share.append(on_turns / max(1, spent))
        leading.append(next((i for i, x in enumerate(items) if x.kind != "turn"), len(items)))
    print(f"{cap['suite']}: {len(cap['questions'])} questions, {remarks} remarks; tokens an "
          f"item (median / mean): turns {statistics.median(sizes['turn']):.0f} / "
          f"{statistics.mean(sizes['turn']):.1f}, memories "
          f"{statistics.median(sizes['memory']):.0f} / {statistics.mean(sizes['memory']):.1f}; "
          f"turns' share of the first 500 tokens {100 * statistics.mean(share):.1f}%; "
          f"leading turns {statistics.mean(leading):.2f} a question")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=None, help="default: the shipped suite")
    ap.add_argument("--format", default="eros", choices=["eros", "locomo", "longmemeval"])
    ap.add_argument("--extractor", default="configured", choices=["configured", "observations"])
    ap.add_argument("--users", type=int, default=None)
    ap.add_argument("--capture", default=None, help="replay, ask, pickle fused's inputs here")
    ap.add_argument("--load", default=None, help="re-fuse a capture under --variant …")
    ap.add_argument("--variant", action="append", default=[],
                    help="name:field=value,... (FusionParams fields, or recall_* settings)")
    ap.add_argument("--kinds", default="all,multi-hop",
                    type=lambda s: s.split(","))
    ap.add_argument("--budgets", default=(), type=lambda s: tuple(int(b) for b in s.split(",")),
                    help="token budgets besides the eval's 500, 1000, 2000 (e.g. 300,400)")
    ap.add_argument("--tokens", action="store_true",
                    help="per question, the tokens each variant spends before its evidence")
    ap.add_argument("--shares", action="store_true",
                    help="with --load: where the shipped list's first 500 tokens go")
    args = ap.parse_args(argv)
    if "holdout" in str(args.suite) or "holdout" in str(args.load):
        print("fusion_capture: the held-out set is never tuned on", file=sys.stderr)
        return 2
    if args.capture:
        return capture(args)
    if args.load:
        return shares(args) if args.shares else load(args)
    ap.error("--capture FILE or --load FILE")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
