"""Secret detection measured: recall on labelled fake secrets, redactions on ordinary conversations.

``python -m evals.secrets [--cases evals/cases/secrets.json] [--locomo PATH] [--longmemeval PATH]
[--json OUT]``. No server, no model: ``find_secrets`` (mcp_memory/privacy/detect.py) on strings.

- Recall: a labelled secret counts as found when one redaction covers its whole span (a redaction
  may take more, such as ``AccountKey=`` before an Azure key); ``kind`` agreement is not required
  (the set names formats more finely than the detectors do). Per kind and overall.
- Redactions on text without secrets: every LoCoMo turn (``speaker: text`` plus the photo caption,
  as stored by evals/locomo.py), every memory and question of the mixed suite, and every turn of the
  LongMemEval sample's haystacks. Each finding is printed with its kind and its surroundings, the
  secret's own characters masked, so a person can tell a false positive from a true secret.
- Cost: microseconds per text of ``find_secrets`` on each corpus (mean, p50, p99), on whatever
  machine runs it; say whether it was idle.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.locomo_data import load_locomo
from mcp_memory.privacy.detect import find_secrets

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"  # ../shared/data beside the repository
CASES = Path(__file__).parent / "cases"


def recall(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Found / total per kind and overall, and the ids missed."""
    per_kind: dict[str, list[int]] = {}
    missed = []
    for case in cases:
        found = any(s.start <= case["start"] and s.end >= case["end"] for s in find_secrets(case["text"]))
        tally = per_kind.setdefault(case["kind"], [0, 0])
        tally[0] += found
        tally[1] += 1
        if not found:
            missed.append(case["id"])
    found_all = sum(f for f, _ in per_kind.values())
    return {"found": found_all, "total": len(cases), "recall": round(100 * found_all / len(cases), 1),
            "kinds": len(per_kind), "per_kind": {k: f"{f}/{n}" for k, (f, n) in per_kind.items()}, "missed": missed}


def _masked(text: str, start: int, end: int, around: int = 50) -> str:
    """The finding's surroundings with its own characters masked (never print a secret)."""
    value = text[start:end]
    shown = value[:4] + "*" * max(len(value) - 4, 0) if len(value) > 8 else "*" * len(value)
    return (text[max(0, start - around):start] + shown + text[end:end + around]).replace("\n", "\\n")


def scan(name: str, texts: Sequence[str]) -> dict[str, Any]:
    """Redactions ``find_secrets`` makes on ``texts``, with timings."""
    kinds: Counter[str] = Counter()
    findings, times_us, holding = [], [], 0
    for text in texts:
        started = time.perf_counter()
        secrets = find_secrets(text)
        times_us.append((time.perf_counter() - started) * 1e6)
        holding += bool(secrets)
        for secret in secrets:
            kinds[secret.kind] += 1
            findings.append({"kind": secret.kind, "context": _masked(text, secret.start, secret.end)})
    times_us.sort()
    return {"corpus": name, "texts": len(texts), "characters": sum(map(len, texts)),
            "redactions": sum(kinds.values()), "texts_with_redactions": holding, "kinds": dict(kinds),
            "findings": findings,
            "us_per_text": {"mean": round(statistics.fmean(times_us), 1), "p50": round(times_us[len(times_us) // 2], 1),
                            "p99": round(times_us[int(len(times_us) * 0.99)], 1)}}


def corpora(locomo: Path, mixed: Path, longmemeval: Path) -> dict[str, list[str]]:
    conversations, _ = load_locomo(locomo)
    cases = json.loads(mixed.read_text(encoding="utf-8"))
    sample = json.loads(longmemeval.read_text(encoding="utf-8"))
    return {
        "LoCoMo turns": [turn.content for conversation in conversations for turn in conversation.turns],
        "mixed suite (memories and questions)": [m["content"] for m in cases["memories"]]
        + [q["query"] for q in cases["questions"]],
        "LongMemEval sample (haystack turns)": [turn["content"] for question in sample
                                                for session in question["haystack_sessions"] for turn in session],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=CASES / "secrets.json")
    parser.add_argument("--mixed", type=Path, default=CASES / "mixed.json")
    parser.add_argument("--locomo", type=Path, default=DATA / "locomo10.json")
    parser.add_argument("--longmemeval", type=Path, default=DATA / "longmemeval_s_cleaned.sample50.json")
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    args = parser.parse_args(argv)
    labelled = json.loads(args.cases.read_text(encoding="utf-8"))["cases"]
    found = recall(labelled)
    print(f"recall: {found['found']}/{found['total']} = {found['recall']}% over {found['kinds']} kinds; "
          f"missed: {', '.join(found['missed']) or 'none'}")
    for kind, share in found["per_kind"].items():
        print(f"  {kind}: {share}")
    scans = [scan(name, texts) for name, texts in corpora(args.locomo, args.mixed, args.longmemeval).items()]
    print("\n| corpus | texts | characters | redactions | texts with one | us/text mean | p50 | p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for result in scans:
        cost = result["us_per_text"]
        print(f"| {result['corpus']} | {result['texts']:,} | {result['characters']:,} | {result['redactions']} | "
              f"{result['texts_with_redactions']} | {cost['mean']} | {cost['p50']} | {cost['p99']} |")
    for result in scans:
        for finding in result["findings"]:
            print(f"{result['corpus']}: {finding['kind']}: {finding['context']}")
    if args.json is not None:
        args.json.write_text(json.dumps({"recall": found, "scans": scans}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
