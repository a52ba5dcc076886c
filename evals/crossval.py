"""Choose among retrieval modes by 2-fold cross-validation: ``python -m evals.crossval REPORT.json``.

Reads a LoCoMo report written with ``--folds 2`` and prints, per mcp-memory mode, recall@10 per
category and overall, its change against ``default``, and recall@10 on each fold. Then the
held-out pick: the mode with the best recall@10 (1-5) on one fold, scored on the other, both ways
(ties go to ``default``, then to the earlier mode). A mode that wins only in-sample shows here as a
held-out score below the default's on the same fold.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["held_out", "main"]

_GROUPS = ("1", "2", "3", "4", "5", "all")


def _r10(summary: dict[str, Any], group: str = "all") -> float:
    return float(summary[group]["recall"]["10"])


def held_out(folds: dict[str, list[float]], baseline: str = "default") -> list[tuple[int, str, float, float]]:
    """For each fold i: (i, the mode best on the other fold, its score on fold i, the baseline's score on fold i).

    Args:
        folds: mode -> recall@10 on fold 1 and fold 2.
        baseline: preferred on ties.
    """
    order = sorted(folds, key=lambda name: name != baseline)  # the baseline first: it wins ties
    picks = []
    for held in (0, 1):
        other = 1 - held
        best = max(order, key=lambda name: folds[name][other])  # max keeps the first of equal scores
        picks.append((held + 1, best, folds[best][held], folds[baseline][held]))
    return picks


def main(argv: list[str] | None = None) -> int:
    """Print the per-mode table and the held-out picks (stdout)."""
    parser = argparse.ArgumentParser(prog="python -m evals.crossval", description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a LoCoMo JSON report written with --folds 2")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text())
    results = {name: r for name, r in report["retrievers"].items() if name != "bm25"}
    if "default" not in results or any(len(r.get("folds") or []) != 2 for r in results.values()):
        print("the report needs a 'default' mode and --folds 2", file=sys.stderr)
        return 2
    base = results["default"]["summary"]
    print("| mode | " + " | ".join(f"R@10 {g}" for g in _GROUPS) + " | Δ all | fold 1 | fold 2 |")
    print("|---" * (len(_GROUPS) + 4) + "|")
    folds: dict[str, list[float]] = {}
    for name, result in results.items():
        summary = result["summary"]
        folds[name] = [_r10(fold["summary"]) for fold in result["folds"]]
        cells = " | ".join(f"{100 * _r10(summary, g):.1f}" for g in _GROUPS)
        delta = 100 * (_r10(summary) - _r10(base))
        print(f"| {name} | {cells} | {delta:+.1f} | {100 * folds[name][0]:.1f} | {100 * folds[name][1]:.1f} |")
    print()
    for fold, pick, score, baseline in held_out(folds):
        print(f"fold {fold} held out: picked {pick!r} on the other fold; R@10 {100 * score:.1f} "
              f"(default {100 * baseline:.1f}, {100 * (score - baseline):+.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
