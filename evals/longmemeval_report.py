"""Present LongMemEval results: a terminal table, a JSON report and a markdown table beside it.

As ``evals.report`` does for LoCoMo: fractions in [0, 1] in the JSON, percentages with one decimal
in the tables, one block of rows per retriever (the modes, then BM25), and with several retrievers
the headline figure (session recall_all@5) per question type side by side.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evals.longmemeval_metrics import GroupSummary, QuestionScore

HEADLINE_K = 5
"""Session recall_all@5: the figure the issue's target and the published comparisons use."""


@dataclass
class LmeResult:
    """Everything measured for one retriever.

    Attributes:
        name: display name, e.g. ``default`` or ``bm25``.
        summary: type (``SSU`` ... ``TR``) or ``all`` -> means.
        settings: the retriever's own description.
        timing: ``prepare_s``, ``turns_per_s``, ``questions_s``, ``latency_ms_p50`` / ``_p95``, ``start_s``.
        extra: retriever counters (stores, de-duplicated, short results).
        per_question: optional rows (question_id, type, gold, ranked turn ids).
        scores: (question_id, score) of every scored question; not written out.
    """

    name: str
    summary: dict[str, GroupSummary]
    settings: dict[str, object]
    timing: dict[str, float]
    extra: dict[str, object] = field(default_factory=dict)
    per_question: list[dict[str, object]] = field(default_factory=list)
    scores: list[tuple[str, QuestionScore]] = field(default_factory=list)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def columns(ks: Sequence[int]) -> list[str]:
    """Column titles after the group: n, session all@k / any@k / NDCG@max, turn R@k / all@max, short."""
    top = max(ks)
    return ["n", *(f"S all@{k}" for k in ks), *(f"S any@{k}" for k in ks), f"S NDCG@{top}",
            *(f"T R@{k}" for k in ks), f"T all@{top}", f"T NDCG@{top}", "short"]


def row(summary: GroupSummary, ks: Sequence[int]) -> list[str]:
    """One row of figures for a group (without its label)."""
    top = max(ks)
    s, t = summary.session, summary.turn
    return [str(summary.n), *(_percent(s.recall_all[k]) for k in ks), *(_percent(s.recall_any[k]) for k in ks),
            _percent(s.ndcg[top]), *(_percent(t.recall[k]) for k in ks), _percent(t.recall_all[top]),
            _percent(t.ndcg[top]), str(summary.short_session_rankings)]


def _label(key: str) -> str:
    return "**all**" if key == "all" else key


def markdown_table(results: Sequence[LmeResult], ks: Sequence[int]) -> str:
    """Every figure, a block of rows per retriever, as a GitHub markdown table."""
    header = ["retriever", "type", *columns(ks)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for result in results:
        for key, summary in result.summary.items():
            if summary.n:
                lines.append("| " + " | ".join([result.name, _label(key), *row(summary, ks)]) + " |")
    return "\n".join(lines)


def headline_table(results: Sequence[LmeResult], k: int = HEADLINE_K) -> str:
    """Session recall_all@k per type (rows) for every retriever (columns)."""
    keys = [key for key, summary in results[0].summary.items() if summary.n] if results else []
    header = ["type", "n", *(result.name for result in results)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for key in keys:
        cells = [_percent(result.summary[key].session.recall_all[k]) for result in results]
        lines.append("| " + " | ".join([_label(key), str(results[0].summary[key].n), *cells]) + " |")
    return "\n".join(lines)


def timing_table(results: Sequence[LmeResult]) -> str:
    """Wall-clock figures per retriever."""
    lines = ["| retriever | start (s) | ingest / index (s) | turns per s | question pass (s) | p50 (ms) | p95 (ms) |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        start = f"{r.timing['start_s']:.1f}" if "start_s" in r.timing else ""
        figures = [f"{r.timing.get(key, 0):.1f}" for key in
                   ("prepare_s", "turns_per_s", "questions_s", "latency_ms_p50", "latency_ms_p95")]
        lines.append("| " + " | ".join([r.name, start, *figures]) + " |")
    return "\n".join(lines)


def misses_lines(results: Sequence[LmeResult]) -> list[str]:
    """Per retriever, the questions whose gold sessions were not all in the headline top k."""
    lines: list[str] = []
    for result in results:
        for key, misses in result.extra.items():
            if key.startswith("session_misses_at_") and isinstance(misses, list):
                lines += [f"{result.name}: {len(misses)} questions miss session recall_all@{key.rsplit('_', 1)[-1]} "
                          "(gold session ranks; first gold turn's result rank):", ""]
                lines += [f"- {m['type']} `{m['question_id']}` {m['gold_session_ranks']}; turn {m['first_gold_turn']}: "
                          f"{m['question']}" for m in misses]
                lines.append("")
    return lines


def print_table(results: Sequence[LmeResult], ks: Sequence[int]) -> None:
    """Print the figures with rich when installed (else markdown), to stdout."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(markdown_table(results, ks))
        return
    table = Table(title="LongMemEval retrieval (%; S = session level, T = turn level; all = recall_all, "
                        "any = recall_any; short = questions whose turns reached fewer sessions than the largest k)")
    table.add_column("retriever")
    table.add_column("type")
    for title in columns(ks):
        table.add_column(title, justify="right")
    for result in results:
        for position, (key, summary) in enumerate(result.summary.items()):
            if key == "all":
                table.add_section()
            if summary.n:
                table.add_row(result.name if position == 0 else "", key, *row(summary, ks))
        table.add_section()
    console = Console()
    if console.width < 170:
        console = Console(width=170)
    console.print(table)


def write_reports(path: Path, header: dict[str, object], results: Sequence[LmeResult], ks: Sequence[int]) -> Path:
    """Write the JSON report at ``path`` and its markdown twin beside it; returns the markdown path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        **header,
        "retrievers": {
            result.name: {
                "settings": result.settings,
                "timing": result.timing,
                "extra": result.extra,
                "summary": {key: asdict(summary) for key, summary in result.summary.items()},
                **({"per_question": result.per_question} if result.per_question else {}),
            }
            for result in results
        },
    }
    path.write_text(json.dumps(body, indent=2, default=str) + "\n", encoding="utf-8")
    markdown_path = path.with_suffix(".md")
    lines = [f"# LongMemEval retrieval, {header.get('date', '')}", ""]
    if header.get("command"):
        lines += [f"Command: `{header['command']}`", ""]
    git = header.get("git")
    if header.get("source_sha256") and isinstance(git, dict) and git.get("commit"):
        dirty = " plus uncommitted edits in mcp_memory/" if git.get("mcp_memory_uncommitted") else ""
        lines += [f"Server: commit {git['commit']}{dirty}; source sha256 `{header['source_sha256']}`", ""]
    if len(results) > 1:
        k = HEADLINE_K if HEADLINE_K in ks else max(ks)
        lines += [f"Session recall_all@{k} per type (%):", "", headline_table(results, k), "", "All figures (%):", ""]
    notes = header.get("notes", [])
    lines += [markdown_table(results, ks), "", *(f"- {note}" for note in notes if isinstance(notes, list)), "",
              timing_table(results), "", *misses_lines(results)]
    markdown_path.write_text("\n".join(lines), encoding="utf-8")
    return markdown_path
