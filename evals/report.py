"""Present LoCoMo results: a terminal table, a JSON report and a markdown table beside it.

Figures are kept as fractions in [0, 1] in the JSON and shown as percentages (one decimal) in the
table and the markdown, as the LoCoMo paper prints them. With several retrievers (the retrieval
modes and BM25) the markdown also puts them side by side, gives the change of recall@10 from each
mode to the next (``stage_deltas``) and, with folds, recall@10 per fold of conversations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evals.metrics import GroupSummary, QuestionScore, group_label


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
        scores: (sample_id, score) of every scored question, for fold summaries; not written out.
        folds: summaries per fold of conversations (same order as the run's folds), when asked.
    """

    name: str
    summary: dict[str, GroupSummary]
    settings: dict[str, object]
    timing: dict[str, float]
    extra: dict[str, object] = field(default_factory=dict)
    per_question: list[dict[str, object]] = field(default_factory=list)
    scores: list[tuple[str, QuestionScore]] = field(default_factory=list)
    folds: list[dict[str, GroupSummary]] = field(default_factory=list)


@dataclass(frozen=True)
class StageDelta:
    """The change of recall@k from one mode to the next.

    Attributes:
        before: the earlier mode's name.
        after: the later mode's name.
        step: what the later mode adds (free text).
        k: the cut-off compared.
        delta: summary key ("1" ... "5", "all", "1-4") -> after's recall@k minus before's (fraction).
    """

    before: str
    after: str
    step: str
    k: int
    delta: dict[str, float]


def stage_deltas(
    results: Sequence[RetrieverResult], k: int = 10, steps: Mapping[str, str] | None = None
) -> list[StageDelta]:
    """recall@k of each result minus that of the result before it, per summary key.

    Args:
        results: in stage order (e.g. the retrieval modes, without the baseline).
        k: the cut-off; every result must have been scored at it.
        steps: result name -> what it adds to the one before; a missing name reads "<before> -> <after>".

    Returns:
        One entry per consecutive pair (none for fewer than two results).

    Raises:
        KeyError: a result was not scored at ``k``.
    """
    deltas = []
    for before, after in zip(results, results[1:], strict=False):
        step = (steps or {}).get(after.name) or f"{before.name} -> {after.name}"
        delta = {
            key: after.summary[key].recall[k] - before.summary[key].recall[k]
            for key in after.summary
            if key in before.summary
        }
        deltas.append(StageDelta(before.name, after.name, step, k, delta))
    return deltas


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


def side_by_side_table(results: Sequence[RetrieverResult], k: int = 10) -> str:
    """recall@k per group (rows) for every retriever (columns), as a markdown table."""
    keys = list(results[0].summary) if results else []
    header = ["category", "n", *(result.name for result in results)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for key in keys:
        label = f"**{group_label(key)}**" if key in ("all", "1-4") else group_label(key)
        cells = [_percent(result.summary[key].recall[k]) if key in result.summary else "" for result in results]
        lines.append("| " + " | ".join([label, str(results[0].summary[key].n), *cells]) + " |")
    return "\n".join(lines)


def overall_table(results: Sequence[RetrieverResult], ks: Sequence[int], keys: Sequence[str] = ("all", "1-4")) -> str:
    """Every figure of the overall groups, one row per retriever and group, as a markdown table."""
    header = ["retriever", "group", *_columns(ks)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for key in keys:
        for result in results:
            if key in result.summary:
                lines.append("| " + " | ".join([result.name, group_label(key), *_row(result.summary[key], ks)]) + " |")
    return "\n".join(lines)


def _signed(value: float) -> str:
    """A fraction as signed percentage points with one decimal."""
    return f"{100 * value:+.1f}"


def deltas_table(deltas: Sequence[StageDelta]) -> str:
    """What each stage added: change of recall@k in points, overall and per category."""
    if not deltas:
        return ""
    keys = ["all", "1-4", *(key for key in deltas[0].delta if key not in ("all", "1-4"))]
    header = ["from", "to", "what changes", *(f"Δ R@{deltas[0].k} {group_label(key)}" for key in keys)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for delta in deltas:
        cells = [_signed(delta.delta[key]) if key in delta.delta else "" for key in keys]
        lines.append("| " + " | ".join([delta.before, delta.after, delta.step, *cells]) + " |")
    return "\n".join(lines)


def folds_table(results: Sequence[RetrieverResult], folds: Sequence[Sequence[str]], k: int = 10) -> str:
    """recall@k overall (1-5 and 1-4) per fold of conversations and on all of them."""
    if not folds:
        return ""
    header = ["retriever"]
    for index, _ in enumerate(folds, start=1):
        header += [f"fold {index} R@{k} (1-5)", f"fold {index} R@{k} (1-4)"]
    header += [f"all R@{k} (1-5)", f"all R@{k} (1-4)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for result in results:
        if len(result.folds) != len(folds):
            continue
        cells = [
            _percent(summary[key].recall[k]) if key in summary else ""
            for summary in [*result.folds, result.summary]
            for key in ("all", "1-4")
        ]
        lines.append("| " + " | ".join([result.name, *cells]) + " |")
    fold_lines = [f"- fold {index}: {', '.join(ids)}" for index, ids in enumerate(folds, start=1)]
    return "\n".join([*lines, "", *fold_lines])


def timing_table(results: Sequence[RetrieverResult]) -> str:
    """Wall-clock figures per retriever, as a markdown table."""
    lines = [
        "| retriever | start (s) | prepare / ingest (s) | question pass (s) | p50 per question (ms) "
        "| p95 per question (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        start = f"{r.timing['start_s']:.1f}" if "start_s" in r.timing else ""
        lines.append(
            f"| {r.name} | {start} | {r.timing.get('prepare_s', 0):.1f} | {r.timing.get('questions_s', 0):.1f} | "
            f"{r.timing.get('latency_ms_p50', 0):.1f} | {r.timing.get('latency_ms_p95', 0):.1f} |"
        )
    return "\n".join(lines)


def summary_markdown(
    results: Sequence[RetrieverResult],
    ks: Sequence[int],
    deltas: Sequence[StageDelta] = (),
    folds: Sequence[Sequence[str]] = (),
    k: int = 10,
) -> str:
    """The compact tables: recall@k side by side, overall figures, stage deltas, folds (when given)."""
    parts = [
        f"recall@{k} per category (%):",
        "",
        side_by_side_table(results, k),
        "",
        "Overall, every cut-off (%; R = recall, H = hit):",
        "",
        overall_table(results, ks),
    ]
    if deltas:
        parts += ["", f"What each stage added (change of recall@{k}, points):", "", deltas_table(deltas)]
    if folds:
        parts += ["", f"recall@{k} per fold of conversations (%):", "", folds_table(results, folds, k)]
    return "\n".join(parts)


def write_reports(
    path: Path,
    header: dict[str, object],
    results: Sequence[RetrieverResult],
    ks: Sequence[int],
    deltas: Sequence[StageDelta] = (),
    folds: Sequence[Sequence[str]] = (),
) -> Path:
    """Write the JSON report at ``path`` and the markdown twin at ``path.with_suffix('.md')``.

    Args:
        path: where the JSON goes; parent folders are created.
        header: run-level fields (date, data, settings, evidence clean-up, notes).
        results: one entry per retriever.
        ks: the cut-offs, for the markdown columns.
        deltas: change of recall@k between consecutive modes (``stage_deltas``).
        folds: conversation ids per fold; each result's ``folds`` holds its summaries in this order.

    Returns:
        The markdown path.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    k = 10 if 10 in ks else ks[0]
    body = {
        **header,
        "retrievers": {
            result.name: {
                "settings": result.settings,
                "timing": result.timing,
                "extra": result.extra,
                "summary": {key: asdict(summary) for key, summary in result.summary.items()},
                **(
                    {
                        "folds": [
                            {"conversations": list(ids), "summary": {key: asdict(s) for key, s in summary.items()}}
                            for ids, summary in zip(folds, result.folds, strict=True)
                        ]
                    }
                    if folds and len(result.folds) == len(folds)
                    else {}
                ),
                **({"per_question": result.per_question} if result.per_question else {}),
            }
            for result in results
        },
        **({"stage_deltas": [asdict(delta) for delta in deltas]} if deltas else {}),
    }
    path.write_text(json.dumps(body, indent=2, default=str) + "\n", encoding="utf-8")
    markdown_path = path.with_suffix(".md")
    notes = header.get("notes", [])
    lines = [f"# LoCoMo evidence retrieval, {header.get('date', '')}", ""]
    if header.get("command"):
        lines += [f"Command: `{header['command']}`", ""]
    git = header.get("git")
    if header.get("source_sha256"):
        commit = ""
        if isinstance(git, dict) and git.get("commit"):
            dirty = " plus uncommitted edits in mcp_memory/" if git.get("mcp_memory_uncommitted") else ""
            commit = f"commit {git['commit']}{dirty}; "
        lines += [f"Server: {commit}source sha256 `{header['source_sha256']}`", ""]
    modes = header.get("modes")
    if isinstance(modes, list) and modes:
        lines += [
            "| mode | retrieves with | recall overrides |",
            "|---|---|---|",
            *(
                f"| {m['name']} | {m['description']} | "
                f"{', '.join(f'{key}={value}' for key, value in m['overrides'].items()) or '(none)'} |"
                for m in modes
                if isinstance(m, dict)
            ),
            "",
        ]
    if len(results) > 1:
        lines += [summary_markdown(results, ks, deltas, folds, k), "", "All figures (%):", ""]
    elif folds:
        lines += [f"recall@{k} per fold of conversations (%):", "", folds_table(results, folds, k), ""]
    lines += [
        markdown_table(results, ks),
        "",
        *(f"- {note}" for note in notes if isinstance(notes, list)),
        "",
        timing_table(results),
        "",
    ]
    markdown_path.write_text("\n".join(lines), encoding="utf-8")
    return markdown_path
