"""One line of an ``mcp-memory`` export, checked with store_memory's rules (pipeline/validate.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp_memory.db.transfer import ImportRow
from mcp_memory.errors import InvalidInput
from mcp_memory.models import Redaction
from mcp_memory.pipeline.validate import (
    check_idempotency_key,
    check_memory_id,
    check_session,
    new_memory,
    parse_occurred_at,
)
from mcp_memory.privacy.settings import SecretsPolicy
from mcp_memory.settings import LimitSettings

__all__ = ["Deleted", "Link", "Record", "parse_line", "parse_record"]

_FIELDS = frozenset({
    "memory_id", "session", "content", "occurred_at", "created_at", "metadata", "importance",
    "superseded_by", "superseded_at", "superseded_source", "idempotency_keys",
})
_HEX_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Link:
    """``memory_id`` was superseded by ``superseded_by`` (both of ``session``) at ``superseded_at``."""

    session: str
    memory_id: str
    superseded_by: str
    superseded_at: datetime
    source: str


@dataclass(frozen=True)
class Deleted:
    """The idempotency keys of a memory deleted before the export (``{key, request_hash,
    content_hash, superseded, created_at}`` each, checked), to record in ``session``."""

    session: str
    memory_id: str
    keys: list[dict[str, Any]]


@dataclass(frozen=True)
class Record:
    """A checked line: the memory to insert (without vectors yet), its supersession if any, and
    the secrets taken out of it."""

    row: ImportRow
    link: Link | None
    redactions: tuple[Redaction, ...] = ()


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string; got {type(value).__name__}")
    return value


def _keys(value: Any, deleted: bool = False) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput("idempotency_keys", "must be a list")
    keys = []
    hashes = ("request_hash", "content_hash") if deleted else ("request_hash",)
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("superseded", []), list) or not all(
                isinstance(entry.get(name), str) and _HEX_SHA256.fullmatch(entry[name]) for name in hashes):
            shape = "request_hash and content_hash (64 hex digits each)" if deleted else "request_hash (64 hex digits)"
            raise InvalidInput("idempotency_keys", f"each must be {{key, {shape}, superseded, created_at}}")
        keys.append({
            "key": check_idempotency_key(_text(entry.get("key"), "idempotency_keys.key")),
            "request_hash": entry["request_hash"],
            "superseded": [check_memory_id(i) for i in entry.get("superseded", [])],
            "created_at": parse_occurred_at(_text(entry.get("created_at"), "idempotency_keys.created_at")),
            **({"content_hash": entry["content_hash"]} if deleted else {}),
        })
    return keys


def parse_line(raw: str) -> Any:
    """The JSON value of one line of a JSON Lines file (its line ending dropped).

    Raises:
        ValueError: the line is not JSON; the message says where in the line by column (from 1),
            as the caller names the file's line (the decoder's own "line 2 column 1" counted
            the lines of the one line it was given).
    """
    line = raw.rstrip("\r\n")
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        where = "the end of the line" if exc.pos >= len(line) else f"column {exc.pos + 1}"
        raise ValueError(f"not JSON ({exc.msg} at {where})") from None
    except RecursionError:  # nested past the decoder's limit
        raise ValueError("not JSON (nested too deep to read)") from None


def _deleted(value: dict[str, Any], limits: LimitSettings, session: str | None, prefix: str) -> Deleted:
    """A line of a deleted memory's keys, checked."""
    unknown = sorted(set(value) - {"memory_id", "session", "deleted", "idempotency_keys"})
    if unknown:
        raise InvalidInput(unknown[0], "is not a field of a deleted memory's line (memory_id, session, deleted, "
                           "idempotency_keys)")
    for field in ("memory_id", "session"):
        if value.get(field) is None:
            raise InvalidInput(field, "is missing")
    memory_id = check_memory_id(_text(value["memory_id"], "memory_id"))
    target = prefix + (session if session is not None else _text(value["session"], "session"))
    return Deleted(check_session(target, limits), memory_id, _keys(value.get("idempotency_keys"), deleted=True))


def parse_record(value: Any, limits: LimitSettings, session: str | None, prefix: str,
                 secrets: SecretsPolicy = "redact") -> Record | Deleted:
    """Check one exported memory and build what to insert.

    Args:
        value: the line's JSON value.
        session: store into this session instead of the line's own; ``prefix`` is put before either.
        secrets: ``privacy.secrets``: secrets in content and metadata are redacted (listed in the
            record's ``redactions``), refused (the line is rejected), or kept, as store_memory does.

    Returns:
        The memory's Record, or for a line of a deleted memory (``"deleted": true``) its keys.

    Raises:
        InvalidInput: the first field that breaks a rule (an unknown field, a missing memory_id,
            session, content or occurred_at, or any store_memory rule, a secret under refuse), by name.
    """
    if not isinstance(value, dict):
        raise InvalidInput("line", "must be a JSON object (one memory)")
    if value.get("deleted") is True:
        return _deleted(value, limits, session, prefix)
    unknown = sorted(set(value) - _FIELDS)
    if unknown:
        raise InvalidInput(unknown[0], f"is not a field of an exported memory (fields: {', '.join(sorted(_FIELDS))})")
    for field in ("memory_id", "session", "content", "occurred_at"):
        if value.get(field) is None:
            raise InvalidInput(field, "is missing")
    memory_id = check_memory_id(_text(value["memory_id"], "memory_id"))
    target = prefix + (session if session is not None else check_session(_text(value["session"], "session"), limits))
    importance = value.get("importance")
    if importance is not None and (isinstance(importance, bool) or not isinstance(importance, int | float)):
        raise InvalidInput("importance", f"must be a number in 0..1; got {importance!r}")
    memory = new_memory(target, _text(value["content"], "content"), _text(value["occurred_at"], "occurred_at"),
                        value.get("metadata"), importance, limits, secrets=secrets)
    created = value.get("created_at")
    row = ImportRow(
        session=memory.session, memory_id=memory_id, content=memory.content, content_hash=memory.content_hash,
        occurred_at=memory.occurred_at, metadata=memory.metadata, importance=memory.importance, embeddings=[],
        created_at=parse_occurred_at(_text(created, "created_at")) if created is not None else datetime.now(UTC),
        idempotency_keys=_keys(value.get("idempotency_keys")),
    )
    link = None
    if value.get("superseded_by") is not None:
        source = value.get("superseded_source") or "explicit"
        if source not in ("explicit", "llm"):
            raise InvalidInput("superseded_source", f"must be 'explicit' or 'llm'; got {source!r}")
        successor = check_memory_id(_text(value["superseded_by"], "superseded_by"))
        if successor == memory_id:
            raise InvalidInput("superseded_by", "must not be the memory itself")
        at = value.get("superseded_at")
        link = Link(memory.session, memory_id, successor,
                    parse_occurred_at(_text(at, "superseded_at")) if at is not None else datetime.now(UTC), source)
    return Record(row, link, memory.redactions)
