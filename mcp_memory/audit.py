"""Audit: one row per recall, delete and usage reset, kept in the caller's session.

Rows hold what was asked and what came back (ids, ranks, timings), never prompts, raw
provider replies or keys.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mcp_memory.db.repository import Repository
from mcp_memory.models import AuditEntry, AuditList

__all__ = ["list_audits", "record"]

AUDIT_KINDS = ("recall", "delete", "delete_session", "usage_reset")


async def record(repository: Repository, session: str, kind: str, detail: dict[str, Any]) -> int:
    """Append an audit row of ``kind`` to ``session``; returns its audit_id."""
    return await repository.add_audit(session, kind, detail)


async def list_audits(
    repository: Repository, session: str, limit: int, kind: str | None, max_chars: int
) -> AuditList:
    """The newest ``limit`` audit rows of ``session``, newest first.

    Older rows are dropped whole when the serialized list would pass ``max_chars``
    (``truncated`` says so); a single row larger than that is still returned alone.
    """
    rows = await repository.list_audits(session, limit, kind)
    entries: list[AuditEntry] = []
    used = 0
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
        size = len(json.dumps(entry.model_dump(), ensure_ascii=False)) + 2
        if entries and used + size > max_chars:
            truncated = True
            break
        entries.append(entry)
        used += size
    return AuditList(audits=entries, truncated=truncated)
