"""``mcp-memory import``: an ``mcp-memory`` export back into a database.

Every line is checked with store_memory's rules; a bad line is reported with its line number and
skipped, never aborting the rest. Every format is read as a stream (``read_entries``): memory holds a
batch, not the file. Good lines are embedded in batches with the embedder's batch API and inserted
with their memory_ids and timestamps; a memory whose id and content (or content alone) its session
already holds is skipped as a duplicate, so a second run stores nothing new, while an id that names
other content (a mem0 id reused in the file, or an earlier import's) is a bad line. Supersession
links are restored once every memory is in, except those that go round in a cycle (bad lines too,
their memories stay current). Progress (rate, ETA) and rejections go to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from mcp_memory.db.transfer import ImportRow
from mcp_memory.deps import Ready
from mcp_memory.errors import ConfigError
from mcp_memory.pipeline.audit import record as audit
from mcp_memory.transfer.export import FORMAT, VERSION
from mcp_memory.transfer.detect import FIRST_LINE_CHARS, detect_format
from mcp_memory.transfer.mcp_kg import kg_memories
from mcp_memory.transfer.mem0 import Mem0FileError, mem0_memories
from mcp_memory.transfer.notes import note_paragraphs
from mcp_memory.transfer.records import Link, Record, parse_line, parse_record

__all__ = ["ImportSummary", "import_file", "read_entries", "resolve_format"]

BATCH_SIZE = 64  # memories per embedding batch and per insert transaction


@dataclass
class ImportSummary:
    """What an import did (or, with ``dry_run``, would do): ``stored`` new memories, ``duplicates``
    skipped, ``rejected`` lines as (line number, or ``path:line`` of a note, and reason),
    ``supersessions`` links restored, ``redacted`` memories stored with secrets replaced by markers."""

    dry_run: bool
    stored: int = 0
    duplicates: int = 0
    supersessions: int = 0
    redacted: int = 0
    rejected: list[tuple[int | str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"stored": self.stored, "duplicates": self.duplicates, "supersessions": self.supersessions,
                "redacted": self.redacted, "rejected": [{"line": n, "reason": r} for n, r in self.rejected],
                "dry_run": self.dry_run}


class _Rate(ProgressColumn):
    """Lines per second (rich's own speed columns speak of bytes)."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f} lines/s" if task.speed else "- lines/s", style="progress.data.speed")


def _check_header(path: Path, first: str, detected: bool = False) -> None:
    """Raise ConfigError unless ``first`` is an export header of our version; ``detected``: the format was
    guessed (``--format auto``), so the message names every format import reads."""
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        if detected:
            raise ConfigError(f"{path}: not a format import reads: line 1 is no mcp-memory export header, mcp-kg "
                              "entity or relation, or mem0 list of memories, and notes need a .md, .markdown or "
                              ".txt name or a folder (or give --format)")
        raise ConfigError(f"{path}: line 1 is not an mcp-memory export header (written by mcp-memory export)")
    if header.get("version") != VERSION:
        raise ConfigError(f"{path}: export format version {header.get('version')!r}; this mcp-memory reads {VERSION}")


async def _flush(ready: Ready, batch: list[tuple[int | str, Record]], summary: ImportSummary,
                 report: Callable[[int | str, str], None]) -> list[tuple[str, str]]:
    """Store one batch: skip what the database holds already, refuse an id reused for other content,
    embed the rest in one call, insert.

    Returns:
        With ``dry_run``, (session, memory_id) of each memory that would be stored; else nothing.
    """
    repository = ready.repository
    known = await repository.existing([(r.row.session, r.row.memory_id, r.row.content_hash) for _, r in batch])
    new: list[ImportRow] = []
    batch_ids: dict[tuple[str, str], tuple[bytes, int | str]] = {}
    for i, (where, record) in enumerate(batch):
        row = record.row
        first = batch_ids.get((row.session, row.memory_id))
        if first is None:
            batch_ids[(row.session, row.memory_id)] = (row.content_hash, where)
        if known.get(i) or (first is not None and first[0] != row.content_hash):
            holder = f"line {first[1]}" if first is not None else "an earlier line or import"
            report(where, f"memory_id: {row.memory_id} is the id of other content in session {row.session!r} "
                   f"({holder}); an id names one memory, so this line is skipped")
        elif i in known or first is not None:  # the same memory again
            summary.duplicates += 1
        else:
            new.append(row)
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
    summary.duplicates += len(rows) - len(inserted)  # the same content twice in the file
    stored = set(inserted)
    for _, r in batch:  # one redact audit row per stored memory that held secrets: kinds and spans, never values
        if r.redactions and id(r.row) in fresh and r.row.memory_id in stored:
            summary.redacted += 1
            await audit(repository, r.row.session, "redact", {"memory_id": r.row.memory_id, "source": "import",
                                                              "redactions": [x.model_dump() for x in r.redactions]})
    return []


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
        counts as a duplicate; with ``dry_run``, duplicates within the file itself are not found,
        nor an id reused for other content more than ``BATCH_SIZE`` memories after its first use.

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
            batch.append((where, record))
            if record.link is not None:
                links.append((where, record.link))
            if len(batch) == BATCH_SIZE:
                planned += await _flush(ready, batch, summary, report)
                batch = []
        if batch:
            planned += await _flush(ready, batch, summary, report)
        looped = _looped(links)
        for place in sorted(looped):
            report(links[place][0], "superseded_by: the file's supersession links go round in a cycle (each memory "
                   "of it superseded by another of it, so none would be current); no link of the cycle is "
                   "restored, its memories are imported as current")
    rows = [(k.session, k.memory_id, k.superseded_by, k.superseded_at, k.source)
            for place, (_, k) in enumerate(links) if place not in looped]
    if dry_run:
        summary.supersessions = await ready.repository.count_supersessions(rows, planned)
    else:
        summary.supersessions = await ready.repository.import_supersessions(rows)
    return summary


_NEEDS_SESSION = {"markdown": "notes name no session", "mcp-kg": "a knowledge graph names no session"}


def resolve_format(path: Path, fmt: str, session: str | None) -> str:
    """The format ``path`` is read as (``fmt``, or detected for ``auto``), once what needs no database
    holds: a session where the format names none, and an export's header line. ``run_import`` asks
    before it starts the database and the model, so a wrong file changes nothing.

    Raises:
        ConfigError: see ``import_file``.
    """
    try:
        detected = fmt == "auto"
        fmt = detect_format(path) if detected else fmt
        if fmt in _NEEDS_SESSION and session is None:
            raise ConfigError(f"--format {fmt} needs --session: {_NEEDS_SESSION[fmt]}")
        if fmt == "mcp-memory":
            with path.open(encoding="utf-8-sig") as handle:
                if first := handle.readline(FIRST_LINE_CHARS):  # an empty file is said so when read
                    _check_header(path, first, detected)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None
    return fmt


def read_entries(path: Path, fmt: str, session: str | None) -> tuple[int, Iterator[tuple[int | str, Any]]]:
    """How many entries, and (line number or ``path:line``, value) per memory of ``path`` read as
    ``fmt``: the memory in the export's line shape, a ValueError for a bad line, None for a blank one.

    Every format is read as a stream (an export or a graph line by line, mem0's JSON by an
    incremental parser, notes line by line), so memory holds one entry at a time, not the file.
    The count is a first pass over the file (lines of an export; the entries themselves otherwise),
    which also finds a mem0 file that is not JSON before anything is stored.

    Raises:
        ConfigError: see ``import_file``.
    """
    fmt = resolve_format(path, fmt, session)
    try:
        if fmt == "mcp-memory":
            with path.open("rb") as counting:
                total = max(sum(1 for _ in counting) - 1, 0)
            return total, _export_entries(path)

        def read() -> Iterator[tuple[int | str, Any]]:
            if fmt == "mem0":
                return mem0_memories(path, session)
            assert session is not None
            return (note_paragraphs if fmt == "markdown" else kg_memories)(path, session)

        total = sum(1 for _ in read())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None
    except Mem0FileError as exc:
        raise ConfigError(f"{path}: not a mem0 export: {exc}") from None
    return total, read()


def _export_entries(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) per memory line of an export; None for a blank line, a
    ValueError for a line that is not JSON.

    Raises:
        ConfigError: the file is empty, not UTF-8, or its first line is not an export header.
    """
    number = 0
    with path.open(encoding="utf-8-sig") as handle:  # -sig: a leading BOM is dropped
        for number, raw in enumerate(_read(handle, path), 1):
            if number == 1:
                _check_header(path, raw)
            elif not raw.strip():
                yield number, None
            else:
                try:
                    yield number, parse_line(raw)
                except ValueError as exc:
                    yield number, exc
    if number == 0:
        raise ConfigError(f"{path}: empty file; an export starts with its header line")


def _read(handle: Any, path: Path) -> Iterator[str]:
    try:
        yield from handle
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None
