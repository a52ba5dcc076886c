"""Secrets already stored: ``mcp-memory doctor`` counts them, ``mcp-memory redact`` replaces them.

Memories stored before ``privacy.secrets = "redact"`` (or under ``keep``, or before a detector
knew their format) may hold secrets. Both read every memory of the chosen sessions through the
export's cursor (one consistent snapshot) and run ``find_secrets`` on its content and metadata
strings. The command then rewrites each such memory in place: the redacted text, new vectors, its
keyword and CJK index rows (``Repository.replace_text``), and a ``redact`` audit row in its session
naming the kinds and positions, never the values. It then redacts every string of the sessions'
audit rows (a recall's query kept under ``keep``, a model's answer repeating it) in place.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from mcp_memory.access.scope import SessionScope, add_scope_arguments, command_scope
from mcp_memory.db.repository import Repository
from mcp_memory.deps import Deps, Ready
from mcp_memory.models import Redaction
from mcp_memory.pipeline.audit import record
from mcp_memory.privacy.redact import redact, screen, screen_metadata
from mcp_memory.settings import Settings

__all__ = ["RedactSummary", "add_redact_command", "count_stored", "redact_stored", "run_redact"]


@dataclass(frozen=True)
class _Found:
    session: str
    memory_id: str
    content: str  # redacted
    metadata: dict[str, Any]  # redacted
    redactions: list[Redaction]


@dataclass
class RedactSummary:
    """What ``redact_stored`` did (or, with ``dry_run``, would do): memories ``scanned``,
    ``redacted`` in place, ``merged`` (deleted: once redacted, the same text as another memory of
    the session), and how many per session; ``audits``: audit rows whose secrets were redacted."""

    dry_run: bool
    scanned: int = 0
    redacted: int = 0
    merged: int = 0
    sessions: dict[str, int] = field(default_factory=dict)
    audits: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"scanned": self.scanned, "redacted": self.redacted, "merged": self.merged,
                "sessions": self.sessions, "audits": self.audits, "dry_run": self.dry_run}


async def _stored(repository: Repository, scope: SessionScope, counted: list[int]) -> AsyncIterator[_Found]:
    """The memories of ``scope`` that hold a secret, redacted; ``counted[0]`` counts every memory read."""
    async for memory in repository.export_memories(scope):
        counted[0] += 1
        content, redactions = screen("content", memory["content"], "redact")
        metadata, in_metadata = screen_metadata(memory["metadata"], "redact")
        if redactions or in_metadata:
            yield _Found(memory["session"], memory["memory_id"], content, metadata, [*redactions, *in_metadata])


async def count_stored(repository: Repository, scope: SessionScope) -> tuple[int, dict[str, int]]:
    """How many memories of ``scope`` were read, and how many per session hold a detectable secret."""
    counted, sessions = [0], {}
    async for found in _stored(repository, scope, counted):
        sessions[found.session] = sessions.get(found.session, 0) + 1
    return counted[0], sessions


async def redact_stored(ready: Ready, scope: SessionScope, dry_run: bool = False) -> RedactSummary:
    """Redact every stored memory of ``scope`` that holds a secret, in place (see the module).

    The memories to rewrite are found first (the cursor's snapshot), then each is embedded again
    and rewritten in its own transaction, and audited.

    Raises:
        EmbeddingError, DatabaseUnavailable: a provider failed; memories rewritten before stay
            rewritten (a rerun finds only the rest).
    """
    summary, counted, found = RedactSummary(dry_run=dry_run), [0], []
    async for memory in _stored(ready.repository, scope, counted):
        found.append(memory)
        summary.sessions[memory.session] = summary.sessions.get(memory.session, 0) + 1
    summary.scanned = counted[0]
    if dry_run:
        summary.redacted = len(found)
        summary.audits = sum([1 async for _ in _audits_with_secrets(ready.repository, scope)])
        return summary
    for memory in found:
        vectors = await ready.embedder.embed_batch(ready.embedder.windows(memory.content))
        content_hash = hashlib.sha256(memory.content.encode()).digest()
        there, other = await ready.repository.replace_text(memory.session, memory.memory_id, memory.content,
                                                           content_hash, memory.metadata, vectors)
        if not there:  # deleted since it was read: nothing left to redact
            continue
        detail: dict[str, Any] = {"memory_id": memory.memory_id, "source": "command",
                                  "redactions": [r.model_dump() for r in memory.redactions]}
        if other is None:
            summary.redacted += 1
        else:
            summary.merged += 1
            detail["merged_into"] = other
        await record(ready.repository, memory.session, "redact", detail)
    audits = [row async for row in _audits_with_secrets(ready.repository, scope)]  # the new rows hold none
    for session, audit_id, detail in audits:
        await ready.repository.replace_audit_detail(session, audit_id, detail)
    summary.audits = len(audits)
    return summary


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # most strings of a recall row


def _scrubbed(value: Any) -> Any:
    """``value`` (an audit detail, or a part of it) with every string's secrets redacted."""
    if isinstance(value, str):
        return value if len(value) < 8 or _ID.fullmatch(value) else redact(value, "audit")[0]  # too short to hold one
    if isinstance(value, dict):
        return {key: _scrubbed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    return value


async def _audits_with_secrets(repository: Repository, scope: SessionScope) -> AsyncIterator[tuple[str, int, Any]]:
    """(session, audit_id, redacted detail) of the audit rows of ``scope`` whose detail holds a secret."""
    async for session, audit_id, detail in repository.audit_rows(scope):
        scrubbed = _scrubbed(detail)
        if scrubbed != detail:
            yield session, audit_id, scrubbed


async def run_redact(settings: Settings, session: str | None, sessions_like: str | None, everything: bool,
                     dry_run: bool) -> None:
    """``mcp-memory redact``: the summary as JSON on stdout, one line on stderr.

    Raises:
        ConfigError: a bad session pattern.
    """
    scope = command_scope(session, sessions_like, everything)
    deps = Deps(settings)
    try:
        await deps.start()
        summary = await redact_stored(await deps.ready(), scope, dry_run)
    finally:
        await deps.close()
    verb = "would redact" if dry_run else "redacted"
    print(f"scanned {summary.scanned} memories; {verb} {summary.redacted}, merged {summary.merged}; "
          f"audit rows {'to redact' if dry_run else 'redacted'}: {summary.audits}", file=sys.stderr)
    print(json.dumps(summary.as_json(), ensure_ascii=False, indent=2))


def add_redact_command(commands: Any, common: argparse.ArgumentParser) -> None:
    """The ``redact`` command's arguments, on the CLI's subparsers ``commands``."""
    redact = commands.add_parser(
        "redact", parents=[common], help="replace secrets in stored memories by [redacted: <kind>] (in place)",
        description="Find the memories of the chosen sessions whose content or metadata holds a secret (API keys, "
        "tokens, passwords in URLs or assignments, private keys; mcp-memory doctor counts them), replace each "
        "secret by [redacted: <kind>], embed and index the memory again, and write a redact audit row naming "
        "the kinds and positions (never the values). A memory whose redacted text another memory of its "
        "session already has is deleted (merged). The summary as JSON on stdout. See docs/privacy.md.")
    add_scope_arguments(redact)
    redact.add_argument("--dry-run", action="store_true", help="find and count; change nothing")
