"""Split a LongMemEval report's questions in two fixed halves: ``python -m evals.longmemeval_halves REPORT.json``.

A recall change is tuned on half A and judged on half B, which it was not fitted to. A question's half
comes from a hash of its ``question_id`` (sha256, even: A, odd: B), so it is the same in every run and
every split of the data. Every question is re-scored from the report's per-question rows
(``--per-question``); the table gives session recall_all@k per type for A, B and all, one column per
retriever, BM25 among them.

Failure policy: a report without per-question rows raises ``SystemExit`` with one line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from evals.longmemeval_data import QUESTION_TYPES
from evals.longmemeval_metrics import score_question, summarize

HALVES = ("A", "B")


def half(question_id: str) -> str:
    """``"A"`` or ``"B"``: the parity of the sha256 of the question id."""
    return HALVES[int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2]


def halves_table(report: dict, k: int = 5) -> list[str]:
    """Markdown rows: type, n per half, then for each retriever recall_all@k as ``A / B / all``.

    Raises:
        SystemExit: a retriever of the report has no per-question rows.
    """
    ks = tuple(report["settings"]["ks"])
    names = list(report["retrievers"])
    columns: dict[str, dict[str, dict[str, float]]] = {}
    counts: dict[str, dict[str, int]] = {}
    for name in names:
        rows = report["retrievers"][name].get("per_question")
        if not rows:
            raise SystemExit(f"retriever {name} has no per-question rows; run evals.longmemeval with --per-question")
        scored = [(half(row["question_id"]), score_question(row["type"], row["gold_sessions"], row["gold_turns"],
                                                            [tuple(group) for group in row["ranked"]], ks))
                  for row in rows]
        for part in (*HALVES, "all"):
            summary = summarize([score for where, score in scored if part in ("all", where)], ks)
            for short, level in summary.items():
                columns.setdefault(name, {}).setdefault(short, {})[part] = 100 * level.session.recall_all[k]
                counts.setdefault(short, {})[part] = level.n
    lines = [f"| type | n (A / B) | {' | '.join(names)} |", f"|---|---|{'---|' * len(names)}"]
    for short in (*QUESTION_TYPES.values(), "all"):
        if not counts.get(short, {}).get("all"):
            continue
        cells = [" / ".join(f"{columns[name][short][part]:.1f}" for part in (*HALVES, "all")) for name in names]
        label = "**all**" if short == "all" else short
        lines.append(f"| {label} | {counts[short]['A']} / {counts[short]['B']} | {' | '.join(cells)} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.longmemeval_halves``."""
    parser = argparse.ArgumentParser(prog="python -m evals.longmemeval_halves", description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report written with --per-question")
    parser.add_argument("--k", type=int, default=5, help="the cut-off of session recall_all (default 5)")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text(encoding="utf-8"))
    print(f"session recall_all@{args.k}, half A / half B / all (%)")
    print("\n".join(halves_table(report, args.k)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
