"""How well the no-LLM update rule separates updates from other pairs: ``python -m evals.update_pairs``.

Embeds every memory of the mixed suite's case file with the product's embedder (the default local
model unless ``MCP_MEMORY_EMBEDDING__*`` says otherwise) and scores pairs of memories of one session,
each ordered older -> newer by ``occurred_at``:

- **update pairs**: the case file's ``supersedes`` links, and the links they imply along a chain
  (Berlin -> Copenhagen -> Vienna also gives Berlin -> Vienna);
- **random pairs**: ``--random`` pairs drawn (seeded) from all other pairs of a session;
- **near-neighbour pairs**: each memory with its ``--near`` most similar memories of its session
  (cosine), less the update pairs: the pairs a recall puts side by side;
- **all pairs**: every other pair of a session.

For cosine alone (``> --cosine``) and for ``mcp_memory.pipeline.implicit_updates.is_update`` it
prints the share of each group detected, and precision and recall of detecting update pairs
among all pairs and among update + near-neighbour pairs, and writes them as JSON with ``--report``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from evals.mixed import DEFAULT_CASES

Pair = tuple[int, int]


def update_pairs(memories: Sequence[dict[str, Any]]) -> set[Pair]:
    """(older, newer) index pairs of the ``supersedes`` links and of the links they imply along chains."""
    index = {m["id"]: i for i, m in enumerate(memories)}
    older_of = {index[m["id"]]: {index[o] for o in m.get("supersedes", [])} for m in memories}
    pairs: set[Pair] = set()
    for newer in older_of:
        stack = list(older_of[newer])
        while stack:
            older = stack.pop()
            if (older, newer) not in pairs:
                pairs.add((older, newer))
                stack.extend(older_of[older])
    return pairs


def session_pairs(memories: Sequence[dict[str, Any]]) -> list[Pair]:
    """Every pair of memories of one session, (older, newer) by ``occurred_at`` (ties by file order)."""
    sessions: dict[str, list[int]] = {}
    for i, memory in enumerate(memories):
        sessions.setdefault(memory["session"], []).append(i)
    when = [datetime.fromisoformat(m["occurred_at"]) for m in memories]
    return [(a, b) if (when[a], a) <= (when[b], b) else (b, a)
            for ids in sessions.values() for a, b in itertools.combinations(ids, 2)]


def near_pairs(memories: Sequence[dict[str, Any]], similarity: np.ndarray, near: int) -> set[Pair]:
    """Each memory with its ``near`` most similar memories of its session, as (older, newer) pairs."""
    ordered = {frozenset(p): p for p in session_pairs(memories)}
    sessions: dict[str, list[int]] = {}
    for i, memory in enumerate(memories):
        sessions.setdefault(memory["session"], []).append(i)
    found: set[Pair] = set()
    for ids in sessions.values():
        block = similarity[np.ix_(ids, ids)]
        for row, i in enumerate(ids):
            nearest = [column for column in np.argsort(-block[row], kind="stable") if column != row][:near]
            found.update(ordered[frozenset((i, ids[column]))] for column in nearest)
    return found


def separation(detect: Callable[[Pair], bool], updates: set[Pair], groups: dict[str, Sequence[Pair]]) -> dict[str, Any]:
    """Share of each group detected, and precision/recall of update detection among all and near pairs."""
    out: dict[str, Any] = {name: sum(map(detect, pairs)) / len(pairs) for name, pairs in groups.items()}
    found = sum(map(detect, updates))
    for name in ("all", "near"):
        false = sum(map(detect, groups[name]))
        out[f"precision_{name}"] = found / (found + false) if found + false else None
        out[f"false_{name}"] = false
    out["recall"] = found / len(updates)
    out["found"] = found
    return out


async def embed(texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` from the product's embedder, one row each."""
    from mcp_memory.embedding.embed import load_embedder
    from mcp_memory.settings import Settings

    settings = Settings()
    embedder = await load_embedder(settings.embedding, settings.data_dir / "models")
    rows: list[np.ndarray] = []
    for start in range(0, len(texts), 32):
        rows += await embedder.embed_batch(texts[start : start + 32])
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.update_pairs``."""
    from mcp_memory.pipeline.implicit_updates import is_update

    parser = argparse.ArgumentParser(prog="python -m evals.update_pairs", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--cosine", type=float, default=0.7, help="threshold of the cosine-only rule (default 0.7)")
    parser.add_argument("--random", type=int, default=5000, help="random pairs (default 5000)")
    parser.add_argument("--near", type=int, default=5, help="nearest memories per memory (default 5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    memories = json.loads(args.cases.read_text(encoding="utf-8"))["memories"]
    vectors = anyio.run(embed, [m["content"] for m in memories])
    similarity = vectors @ vectors.T
    updates = update_pairs(memories)
    others = [p for p in session_pairs(memories) if p not in updates]
    groups = {"updates": sorted(updates), "random": random.Random(args.seed).sample(others, min(args.random, len(others))),
              "near": sorted(near_pairs(memories, similarity, args.near) - updates), "all": others}
    rules = {f"cosine > {args.cosine}": lambda p: bool(similarity[p] > args.cosine),
             "is_update": lambda p: is_update(memories[p[0]]["content"], memories[p[1]]["content"], float(similarity[p]))}
    figures = {name: separation(rule, updates, groups) for name, rule in rules.items()}
    print(f"pairs: {len(updates)} update ({sum(bool(m.get('supersedes')) for m in memories)} direct), "
          f"{len(groups['random'])} random, {len(groups['near'])} near-neighbour, {len(others)} other in all")
    print("| rule | updates | random | near | all | precision (all) | precision (updates + near) | recall |")
    print("|---|---|---|---|---|---|---|---|")
    for name, f in figures.items():
        print(f"| {name} | {100 * f['updates']:.1f} | {100 * f['random']:.1f} | {100 * f['near']:.1f} | "
              f"{100 * f['all']:.2f} | {100 * (f['precision_all'] or 0):.1f} ({f['false_all']} false) | "
              f"{100 * (f['precision_near'] or 0):.1f} ({f['false_near']} false) | {100 * f['recall']:.1f} |")
    if args.report:
        args.report.write_text(json.dumps({"cases": str(args.cases), "counts": {k: len(v) for k, v in groups.items()},
                                           "figures": figures}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
