"""``mcp-memory import``: an ``mcp-memory`` export back into a database.

Every line is checked with store_memory's rules; a bad line is reported with its line number and
skipped, never aborting the rest. Every format is read as a stream (``entries.read_entries``): memory holds a
batch, not the file. Good lines are embedded in batches with the embedder's batch API and inserted
with their memory_ids and timestamps; a memory whose id and content (or content alone) its session
already holds is skipped as a duplicate, so a second run stores nothing new, while an id that names
other content (a mem0 id reused in the file, or an earlier import's) is a bad line. Supersession
links are restored once every memory is in, except those that go round in a cycle (bad lines too,
their memories stay current). Progress (rate, ETA) and rejections go to stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from mcp_memory.db.transfer import ImportRow
from mcp_memory.deps import Ready
from mcp_memory.pipeline.audit import record as audit
from mcp_memory.transfer.entries import read_entries
from mcp_memory.transfer.records import Deleted, Link, Record, parse_record

__all__ = ["ImportSummary", "import_file"]

BATCH_SIZE = 64  # memories per embedding batch and per insert transaction


@dataclass
class ImportSummary:
    """What an import did (or, with ``dry_run``, would do): ``stored`` new memories, ``duplicates``
    skipped, ``rejected`` lines as (line number, or ``path:line`` of a note, and reason),
    ``supersessions`` links restored, ``redacted`` memories stored with secrets replaced by markers,
    ``deleted_keys`` idempotency keys of deleted memories recorded (a late retry with one is an error)."""

    dry_run: bool
    stored: int = 0
    duplicates: int = 0
    supersessions: int = 0
    redacted: int = 0
    deleted_keys: int = 0
    rejected: list[tuple[int | str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"stored": self.stored, "duplicates": self.duplicates, "supersessions": self.supersessions,
                "redacted": self.redacted, "deleted_keys": self.deleted_keys,
                "rejected": [{"line": n, "reason": r} for n, r in self.rejected], "dry_run": self.dry_run}


class _Rate(ProgressColumn):
    """Lines per second (rich's own speed columns speak of bytes)."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f} lines/s" if task.speed else "- lines/s", style="progress.data.speed")


async def _flush(ready: Ready, batch: list[tuple[int | str, Record]], summary: ImportSummary,
                 report: Callable[[int | str, str], None],
                 aliases: dict[tuple[str, str], str | None]) -> list[tuple[str, str]]:
    """Store one batch: skip what the database holds already, refuse an id reused for other content,
    embed the rest in one call, insert. A memory skipped because its content is stored under another
    id gets that id in ``aliases`` ((session, its id) -> the stored id), for its supersession links;
    a line refused for reusing an id gets None there (no link may name that id for it).

    Returns:
        With ``dry_run``, (session, memory_id) of each memory that would be stored; else nothing.
    """
    repository = ready.repository
    known = await repository.existing([(r.row.session, r.row.memory_id, r.row.content_hash) for _, r in batch])
    new: list[ImportRow] = []
    batch_ids: dict[tuple[str, str], tuple[bytes, int | str]] = {}
    batch_texts: dict[tuple[str, bytes], str] = {}  # (session, content_hash) -> id of the batch's new memory
    for i, (where, record) in enumerate(batch):
        row = record.row
        first = batch_ids.get((row.session, row.memory_id))
        if first is None:
            batch_ids[(row.session, row.memory_id)] = (row.content_hash, where)
        reused, holder = known.get(i, (False, None))
        same_text = batch_texts.get((row.session, row.content_hash))
        if reused or (first is not None and first[0] != row.content_hash):
            held = f"line {first[1]}" if first is not None else "an earlier line or import"
            report(where, f"memory_id: {row.memory_id} is the id of other content in session {row.session!r} "
                   f"({held}); an id names one memory, so this line is skipped")
            if first is None:  # the id is the database's: a link to it would name that other memory
                aliases[(row.session, row.memory_id)] = None
        elif i in known or first is not None or same_text is not None:  # the same memory again
            summary.duplicates += 1
            stored_as = holder or same_text
            if stored_as is not None and stored_as != row.memory_id:
                aliases[(row.session, row.memory_id)] = stored_as
        else:
            new.append(row)
            batch_texts[(row.session, row.content_hash)] = row.memory_id
    fresh = {id(row) for row in new}
    if summary.dry_run:
        summary.stored += len(new)  # would be stored
        summary.redacted += sum(1 for _, r in batch if r.redactions and id(r.row) in fresh)
        return [(row.session, row.memory_id) for row in new]
    if not new:
        return []
    windows = [ready.embedder.windows(row.content) for row in new]
    vectors = await ready.embedder.embed_batch([w for pieces in windows for w in pieces])
    rows, start = [], 0
    for row, pieces in zip(new, windows, strict=True):
        rows.append(replace(row, embeddings=vectors[start:start + len(pieces)]))
        start += len(pieces)
    inserted = await repository.import_memories(rows)
    summary.stored += len(inserted)
    summary.duplicates += len(rows) - len(inserted)  # stored meanwhile by another writer
    stored = set(inserted)
    for _, r in batch:  # one redact audit row per stored memory that held secrets: kinds and spans, never values
        if r.redactions and id(r.row) in fresh and r.row.memory_id in stored:
            summary.redacted += 1
            await audit(repository, r.row.session, "redact", {"memory_id": r.row.memory_id, "source": "import",
                                                              "redactions": [x.model_dump() for x in r.redactions]})
    return []


def _aliased(link: Link, aliases: dict[tuple[str, str], str | None]) -> Link | None:
    """``link`` between the ids its two memories are stored under (a memory skipped as a duplicate of
    content stored under another id is that memory); None when its successor's id names another memory."""
    successor = aliases.get((link.session, link.superseded_by), link.superseded_by)
    if successor is None:
        return None
    return replace(link, memory_id=aliases.get((link.session, link.memory_id), link.memory_id) or link.memory_id,
                   superseded_by=successor)


def _looped(links: list[tuple[int | str, Link]]) -> set[int]:
    """Positions in ``links`` of the links that close a cycle (A superseded by B, B by C, C by A):
    every link of each cycle. A memory's first link counts, as the database keeps the first."""
    successor: dict[tuple[str, str], tuple[str, int]] = {}
    for place, (_, link) in enumerate(links):
        successor.setdefault((link.session, link.memory_id), (link.superseded_by, place))
    state: dict[tuple[str, str], bool] = {}  # False: on the current walk; True: walked before
    looped: set[int] = set()
    for start in successor:
        walk: list[tuple[str, str]] = []
        node = start
        while node in successor and node not in state:
            state[node] = False
            walk.append(node)
            node = (node[0], successor[node][0])
        if state.get(node) is False:  # the walk came back to itself
            looped.update(successor[n][1] for n in walk[walk.index(node):])
        state.update((n, True) for n in walk)
    return looped


async def import_file(ready: Ready, path: Path, session: str | None = None, prefix: str = "",
                      dry_run: bool = False, console: Console | None = None, fmt: str = "auto") -> ImportSummary:
    """Import the ``mcp-memory`` export, or the folder or file of notes (``transfer/notes.py``), at ``path``.

    Args:
        fmt: ``mcp-memory``, ``markdown``, ``mcp-kg`` (transfer/mcp_kg.py), ``mem0``
            (transfer/mem0.py), or ``auto`` (transfer/detect.py).
        session: store every memory into this session instead of its own; required for
            markdown and mcp-kg, which name no session.
        prefix: put this before every target session name (``restored:``).
        dry_run: check every line and count what would be stored; write nothing, embed nothing.

    Returns:
        The summary. A memory of the file whose id or content its target session already holds
        counts as a duplicate, and its supersession links name the memory holding that content; with
        ``dry_run``, neither a duplicate within the file nor an id reused for other content is found
        more than ``BATCH_SIZE`` memories after the first.

    Raises:
        ConfigError: the file cannot be read, or its first line is not an export header, or
            it is not mem0's JSON, or markdown or mcp-kg is imported without a session.
        EmbeddingError, DatabaseUnavailable: a provider failed; batches stored before stay stored
            (a rerun skips them as duplicates).
    """
    console = console or Console(stderr=True)
    limits = ready.settings.limits
    summary = ImportSummary(dry_run=dry_run)
    links: list[tuple[int | str, Link]] = []
    deleted_keys: list[tuple[str, str, dict[str, Any]]] = []  # (session, memory_id, key) of deleted memories
    aliases: dict[tuple[str, str], str | None] = {}  # (session, id in the file) -> id its content is stored
    # under, or None when the id is another memory's
    total, entries = read_entries(path, fmt, session)
    planned: list[tuple[str, str]] = []  # with dry_run: the memories that would be stored
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _Rate(),
               TextColumn("ETA"), TimeRemainingColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:

        def report(where: int | str, reason: str) -> None:
            summary.rejected.append((where, reason))
            shown = f"line {where}" if isinstance(where, int) else where
            progress.console.print(f"{shown}: {reason}", markup=False, highlight=False, soft_wrap=True)

        task = progress.add_task("checking" if dry_run else "importing", total=total)
        batch: list[tuple[int | str, Record]] = []
        for where, value in entries:
            progress.advance(task)
            if value is None:
                continue
            try:
                if isinstance(value, ValueError):
                    raise value
                record = parse_record(value, limits, session, prefix, ready.settings.privacy.secrets)
            except ValueError as exc:  # InvalidInput is one
                report(where, str(exc))
                continue
            if isinstance(record, Deleted):
                deleted_keys += [(record.session, record.memory_id, key) for key in record.keys]
                continue
            batch.append((where, record))
            if record.link is not None:
                links.append((where, record.link))
            if len(batch) == BATCH_SIZE:
                planned += await _flush(ready, batch, summary, report, aliases)
                batch = []
        if batch:
            planned += await _flush(ready, batch, summary, report, aliases)
        skipped = {where for where, _ in summary.rejected}  # a line skipped whole restores no link either
        aliased = [(where, _aliased(link, aliases)) for where, link in links if where not in skipped]
        links = [(where, link) for where, link in aliased if link is not None and link.memory_id != link.superseded_by]
        looped = _looped(links)
        for place in sorted(looped):
            report(links[place][0], "superseded_by: the file's supersession links go round in a cycle (each memory "
                   "of it superseded by another of it, so none would be current); no link of the cycle is "
                   "restored, its memories are imported as current")
    rows = [(k.session, k.memory_id, k.superseded_by, k.superseded_at, k.source)
            for place, (_, k) in enumerate(links) if place not in looped]
    summary.deleted_keys = await ready.repository.import_deleted_keys(deleted_keys, dry_run)
    if dry_run:
        summary.supersessions = await ready.repository.count_supersessions(rows, planned)
    else:
        summary.supersessions = await ready.repository.import_supersessions(rows)
    return summary
