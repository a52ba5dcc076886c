"""Tables of the mixed suite's report: the per-group figures of one configuration, and the
supersession figures of every configuration side by side (printed with rich, written as markdown)."""

from __future__ import annotations

from typing import Any

__all__ = ["COLUMNS", "SUPERSESSION_COLUMNS", "cells", "markdown", "print_supersession", "print_table", "supersession_cells"]

COLUMNS = (("n", "n"), ("recall hit", "recall_hit_rate"), ("selection hit", "selection_hit_rate"),
           ("evidence R@k", "evidence_recall"), ("MRR", "mrr"), ("updates n", "update_n"),
           ("newer first", "update_ordering_rate"), ("older returned", "superseded_returned_rate"), ("leaks", "leaks"))


def cells(figures: dict[str, float | None]) -> list[str]:
    """A group's figures as table cells: counts as integers, rates as percentages, n/a when undefined."""
    out = []
    for _, key in COLUMNS:
        value = figures[key]
        out.append("n/a" if value is None else str(int(value)) if key in ("n", "update_n", "leaks")
                   else f"{100 * value:.1f}")
    return out


SUPERSESSION_COLUMNS = (
    ("newer first (update)", "newer_first"), ("newer first, either found", "newer_first_found"),
    ("history found (historical)", "history_found"),
    ("history found, include_superseded", "history_found_included"), ("recall hit (unrelated)", "unrelated_hit"),
    ("recall hit (rest)", "rest_hit"), ("recall hit (all)", "all_hit"), ("selection hit (all)", "all_selected"),
    ("marked / expected", "marked"),
)
"""Per configuration: the issue's three figures (newer first also among the update questions where the
newer or an older memory was returned at all), recall hit on the questions that are neither update nor
historical ("rest"), and how many of the case file's supersessions the server marked on store."""


def supersession_cells(figures: dict[str, Any]) -> list[str]:
    """A configuration's supersession figures as table cells (percentages; marked as ``found/expected +extra``)."""
    out = []
    for _, key in SUPERSESSION_COLUMNS:
        value = figures.get(key)
        if key == "marked":
            out.append("n/a" if value is None else f"{value}/{figures['expected']} +{figures['extra_marks']}")
        else:
            out.append("n/a" if value is None else f"{100 * value:.1f}")
    return out


def print_table(summary: dict[str, dict[str, float | None]], top_k: int, config: str = "") -> None:
    """Print one configuration's figures per group as a rich table on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"mixed suite{', ' + config if config else ''}, top_k = {top_k} (%, except n and leaks)")
    table.add_column("group")
    for title, _ in COLUMNS:
        table.add_column(title.replace("R@k", f"R@{top_k}"), justify="right")
    for name, figures in summary.items():
        table.add_row(name, *cells(figures))
    Console(width=max(Console().width, 140)).print(table)


def print_supersession(configs: dict[str, dict[str, Any]], top_k: int) -> None:
    """Print every configuration's supersession figures side by side."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"updated facts per configuration, top_k = {top_k} (%)")
    table.add_column("configuration")
    for title, _ in SUPERSESSION_COLUMNS:
        table.add_column(title, justify="right")
    for name, report in configs.items():
        table.add_row(name, *supersession_cells(report["supersession"]))
    Console(width=max(Console().width, 160)).print(table)


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown: the supersession table of every configuration, then each one's groups and notes."""
    top_k = report["top_k"]
    lines = [f"# Mixed suite, {report['date']}", "", f"Cases: `{report['cases']['path']}` (seed "
             f"{report['cases']['seed']}, sha256 {report['cases']['sha256'][:12]}); top_k = {top_k}.", "",
             "| configuration | " + " | ".join(title for title, _ in SUPERSESSION_COLUMNS) + " |",
             "|---" * (len(SUPERSESSION_COLUMNS) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(supersession_cells(config["supersession"])) + " |"
              for name, config in report["configs"].items()]
    titles = [title.replace("R@k", f"R@{top_k}") for title, _ in COLUMNS]
    for name, config in report["configs"].items():
        lines += ["", f"## {name}: {config['description']}", "",
                  "| group | " + " | ".join(titles) + " |", "|---" * (len(titles) + 1) + "|"]
        lines += [f"| {group} | " + " | ".join(cells(figures)) + " |" for group, figures in config["summary"].items()]
        timing, ingest_stats = config["timing"], config["ingest"]
        lines += ["", f"- Ingest {timing['ingest_s']:.1f} s; questions {timing['questions_s']:.1f} s "
                  f"(p50 {timing['latency_ms_p50']:.0f} ms, p95 {timing['latency_ms_p95']:.0f} ms per recall).",
                  f"- Deleted first: {ingest_stats['deleted']}; de-duplicated stores: {ingest_stats['deduplicated']}; "
                  f"memory ids shared across sessions: {len(ingest_stats['shared_ids'])}.",
                  f"- Answers: {config['answers']['answered']} (null without an answer model)."]
    return "\n".join(lines) + "\n"
