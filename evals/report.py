"""Present LoCoMo results: a terminal table, a JSON report and a markdown table beside it.

Figures are kept as fractions in [0, 1] in the JSON and shown as percentages (one decimal) in the
table and the markdown, as the LoCoMo paper prints them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evals.metrics import GroupSummary, group_label


@dataclass
class RetrieverResult:
    """Everything measured for one retriever.

    Attributes:
        name: display name, e.g. ``mcp-memory`` or ``bm25``.
        summary: summary key ("1" ... "5", "all", "1-4") -> means.
        settings: the retriever's own description (``Retriever.describe()``).
        timing: wall-clock figures: ``prepare_s`` (index/ingest), ``questions_s`` (question pass),
            ``latency_ms_p50`` / ``latency_ms_p95`` per question.
        extra: retriever-specific counters (e.g. truncated recalls).
        per_question: optional rows (sample_id, qa_index, category, evidence, ranked dia_id groups).
    """

    name: str
    summary: dict[str, GroupSummary]
    settings: dict[str, object]
    timing: dict[str, float]
    extra: dict[str, object] = field(default_factory=dict)
    per_question: list[dict[str, object]] = field(default_factory=list)


def _percent(value: float) -> str:
    """Format a fraction as a percentage with one decimal."""
    return f"{100 * value:.1f}"


def _columns(ks: Sequence[int]) -> list[str]:
    """Column titles after the group column: n, R@k..., H@k..., MRR."""
    return ["n", *(f"R@{k}" for k in ks), *(f"H@{k}" for k in ks), "MRR"]


def _row(summary: GroupSummary, ks: Sequence[int]) -> list[str]:
    """One table row for a group (without its label)."""
    return [
        str(summary.n),
        *(_percent(summary.recall[k]) for k in ks),
        *(_percent(summary.hit[k]) for k in ks),
        _percent(summary.mrr),
    ]


def print_table(results: Sequence[RetrieverResult], ks: Sequence[int]) -> None:
    """Print one table with a block of rows per retriever, with rich when installed, to stdout."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(markdown_table(results, ks))
        return
    table = Table(title="LoCoMo evidence retrieval (%; R = recall, H = hit; questions without evidence left out)")
    table.add_column("retriever")
    table.add_column("category")
    for title in _columns(ks):
        table.add_column(title, justify="right")
    for result in results:
        for position, (key, summary) in enumerate(result.summary.items()):
            if key == "all":
                table.add_section()
            table.add_row(result.name if position == 0 else "", group_label(key), *_row(summary, ks))
        table.add_section()
    console = Console()
    if console.width < 150:  # piped output defaults to 80 columns, too narrow for the figures
        console = Console(width=150)
    console.print(table)


def markdown_table(results: Sequence[RetrieverResult], ks: Sequence[int]) -> str:
    """The same figures as ``print_table`` as a GitHub markdown table."""
    header = ["retriever", "category", *_columns(ks)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for result in results:
        for key, summary in result.summary.items():
            label = f"**{group_label(key)}**" if key in ("all", "1-4") else group_label(key)
            lines.append("| " + " | ".join([result.name, label, *_row(summary, ks)]) + " |")
    return "\n".join(lines)


def write_reports(path: Path, header: dict[str, object], results: Sequence[RetrieverResult], ks: Sequence[int]) -> Path:
    """Write the JSON report at ``path`` and the markdown twin at ``path.with_suffix('.md')``.

    Args:
        path: where the JSON goes; parent folders are created.
        header: run-level fields (date, data, settings, evidence clean-up, notes).
        results: one entry per retriever.
        ks: the cut-offs, for the markdown columns.

    Returns:
        The markdown path.
    """
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
    notes = header.get("notes", [])
    lines = [
        f"# LoCoMo evidence retrieval, {header.get('date', '')}",
        "",
        markdown_table(results, ks),
        "",
        *(f"- {note}" for note in notes if isinstance(notes, list)),
        "",
        "| retriever | prepare (s) | question pass (s) | p50 per question (ms) | p95 per question (ms) |",
        "|---|---|---|---|---|",
        *(
            f"| {r.name} | {r.timing.get('prepare_s', 0):.1f} | {r.timing.get('questions_s', 0):.1f} | "
            f"{r.timing.get('latency_ms_p50', 0):.1f} | {r.timing.get('latency_ms_p95', 0):.1f} |"
            for r in results
        ),
        "",
    ]
    markdown_path.write_text("\n".join(lines), encoding="utf-8")
    return markdown_path
