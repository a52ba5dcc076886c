"""Generate the mixed evaluation cases: ``python -m evals.generate_mixed --output evals/cases/mixed.json``.

An invented world in eight sessions (two English and two Chinese users, an English and a Chinese
project, a bilingual support agent, a travel agent): 1,000 memories and 154 questions. The same
templates fill every session of a kind with other values, so sessions share words and a
cross-session leak would surface; inside a session, distractors share words with the evidence
(three invoice-export tickets, three doctors, the sister's dog beside the user's own), updates
supersede earlier facts ("moved from Berlin to Lisbon"), events carry dates, and identifiers
(tickets, files, error codes, booking codes) are asked both ways. About a third is Chinese.

Every choice comes from one ``random.Random(seed)``: the same seed gives a byte-identical file.
A question names its evidence by case memory id (``m0042``); an update also names the memories
its evidence supersedes (``superseded``), so the runner can check that the newer ranks higher. A
memory that updates another names it (``supersedes``: the direct predecessor, same session), so
the runner can pass ``supersedes`` to ``store_memory`` or script an LLM that finds it. Questions
about updated facts come in three kinds: ``update`` (the current value), ``historical`` (the value
before; its evidence is the superseded memory) and ``unrelated`` (another fact of the session that
shares the subject or the predicate of an update: Alice's sister's city beside Alice's moves).
The machinery (``Memory``, ``Question``, ``Builder``, ``Plan``) is in ``evals.mixed_builder``; the
templates, one function per kind of session (``person_en`` ... ``travel_en``), and ``PLANS`` that
sizes the sessions, are in ``evals.mixed_templates``; this module runs them and writes the file.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.mixed_builder import Builder, Memory, Question, day_en, day_zh
from evals.mixed_templates import PLANS

__all__ = ["DEFAULT_SEED", "KINDS", "PLANS", "day_en", "day_zh", "generate", "render"]

DEFAULT_SEED = 20250601
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "cases" / "mixed.json"
# ``update`` asks for the current value of an updated fact, ``historical`` for the value it replaced,
# ``unrelated`` for another fact of the same session that sits near an update (same subject or same predicate).
KINDS = ("fact", "update", "temporal", "identifier", "distractor", "historical", "unrelated")
SHARED = {  # stored verbatim in every session of a language: de-duplication across sessions would show
    "en": ["Daylight saving time starts on Sunday, so the weekly call moves by an hour.",
           "Reminder: the office is closed on the public holiday next Monday."],
    "zh": ["下周一是法定节假日，办公室不开门。", "提醒：这个周日调休，正常上班。"],
}


def generate(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Build the whole case file as a JSON-ready dict (no dates of generation, so it is reproducible).

    Raises:
        ValueError: a plan offers fewer candidate questions of a kind than its quota.
    """
    rng = random.Random(seed)
    world: dict[str, str] = {}
    states: dict[str, tuple[set[int], set[str]]] = {}
    memories: list[Memory] = []
    questions: list[Question] = []
    for plan in PLANS:
        taken, seen = states.setdefault(plan.session, (set(), set()))
        builder = Builder(rng, plan, taken, seen, world)
        plan.build(builder)
        for line in SHARED[plan.language]:
            if line not in seen:
                builder.add(line)
        templates, pools = plan.fill
        builder.fill(templates, {**pools, "n": plan.person[0]}, plan.size - len(builder.memories))
        for kind, count in zip(KINDS, plan.quota, strict=True):
            offered = [q for q in builder.candidates if q.kind == kind]
            if len(offered) < count:
                raise ValueError(f"{plan.session}: {len(offered)} {kind} questions offered, {count} wanted")
            questions += rng.sample(offered, count)
        memories += builder.memories
    sessions = list(dict.fromkeys(plan.session for plan in PLANS))
    memories.sort(key=lambda m: (sessions.index(m.session), m.occurred_at))
    for index, memory in enumerate(memories, start=1):
        memory.case_id = f"m{index:04d}"
    return {
        "name": "mixed",
        "seed": seed,
        "generator": "python -m evals.generate_mixed",
        "counts": {
            "memories": len(memories),
            "questions": len(questions),
            "memories_zh": sum(m.language == "zh" for m in memories),
            "questions_zh": sum(q.language == "zh" for q in questions),
            "questions_per_kind": {kind: sum(q.kind == kind for q in questions) for kind in KINDS},
            "supersessions": sum(len(m.supersedes) for m in memories),
        },
        "sessions": [
            {"session": s, "description": next(p.description for p in PLANS if p.session == s),
             "memories": sum(m.session == s for m in memories), "questions": sum(q.session == s for q in questions)}
            for s in sessions
        ],
        "memories": [
            {"id": m.case_id, "session": m.session, "language": m.language, "content": m.content,
             "occurred_at": m.occurred_at.isoformat(), **({"metadata": m.metadata} if m.metadata else {}),
             **({"supersedes": [old.case_id for old in m.supersedes]} if m.supersedes else {})}
            for m in memories
        ],
        "questions": [
            {"id": f"q{index:03d}", "session": q.session, "kind": q.kind, "language": q.language, "query": q.query,
             "expected_answer": q.expected_answer, "evidence": [m.case_id for m in q.evidence],
             **({"superseded": [m.case_id for m in q.superseded]} if q.superseded else {})}
            for index, q in enumerate(questions, start=1)
        ],
    }


def render(cases: dict[str, Any]) -> str:
    """The case file's text: indented UTF-8 JSON (Chinese kept readable), newline-terminated."""
    return json.dumps(cases, ensure_ascii=False, indent=2) + "\n"



def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.generate_mixed``."""
    parser = argparse.ArgumentParser(prog="python -m evals.generate_mixed", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"default {DEFAULT_OUTPUT}")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}")
    args = parser.parse_args(argv)
    cases = generate(args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(cases), encoding="utf-8")
    print(f"wrote {args.output}: {json.dumps(cases['counts'], ensure_ascii=False)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
