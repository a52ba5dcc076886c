"""Audit: one row per recall, delete, LLM supersession decision and redaction of secrets, in the caller's session.

Rows hold what was asked and what came back (ids, ranks, timings), never prompts, raw
provider replies or keys.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcp_memory.db.repository import Repository
from mcp_memory.models import AuditEntry, AuditList

__all__ = ["list_audits", "record"]

AUDIT_KINDS = ("recall", "delete", "delete_session", "supersede", "redact")
_ENVELOPE_CHARS = 64  # '{\n  "audits": [' ... '\n  ],\n  "truncated": false\n}' around the rows


async def record(repository: Repository, session: str, kind: str, detail: dict[str, Any]) -> int:
    """Append an audit row of ``kind`` to ``session``; returns its audit_id."""
    return await repository.add_audit(session, kind, detail)


async def list_audits(
    repository: Repository, session: str, limit: int, kind: str | None, max_chars: int
) -> AuditList:
    """The newest ``limit`` audit rows of ``session``, newest first.

    Older rows are dropped whole when the serialized list would pass ``max_chars``
    (``truncated`` says so); a single row larger than that is still returned alone. The size is
    that of the pretty-printed JSON the SDK sends as text, the longer of the two forms.
    """
    rows = await repository.list_audits(session, limit, kind)
    entries: list[AuditEntry] = []
    used = _ENVELOPE_CHARS
    truncated = False
    for row in rows:
        created: datetime = row["created_at"]
        entry = AuditEntry(
            audit_id=row["audit_id"],
            session=row["session"],
            kind=row["kind"],
            created_at=created.isoformat(),
            detail=row["detail"],
        )
        # As the SDK prints it (indent 2): two levels deeper inside the list, after ",\n    ".
        text = entry.model_dump_json(indent=2)
        size = len(text) + 4 * text.count("\n") + 6
        if entries and used + size > max_chars:
            truncated = True
            break
        entries.append(entry)
        used += size
    return AuditList(audits=entries, truncated=truncated)
