"""Checks on tool arguments. Each raises InvalidInput naming the field and the limit.

Nothing is stored or embedded before these pass; text is never normalised (NFC/NFKC) or
trimmed, so what is stored is byte for byte what the caller sent.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import uuid
from datetime import UTC, datetime, time
from typing import Any

from mcp_memory.errors import InvalidInput
from mcp_memory.models import NewMemory
from mcp_memory.privacy.redact import screen, screen_metadata
from mcp_memory.privacy.settings import SecretsPolicy
from mcp_memory.settings import LimitSettings

__all__ = [
    "check_idempotency_key",
    "check_memory_id",
    "check_session",
    "check_supersedes",
    "check_text",
    "check_top_k",
    "json_holds_nul",
    "new_memory",
    "parse_occurred_at",
]


# A date, or a date-time with an optional offset, in ISO 8601's extended form: when one of these fails
# to parse, a field is out of range (day 30 of February, hour 25), not the form. Digits 0-9 only (re.ASCII).
_ISO_SHAPE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)?", re.ASCII
)


def check_session(session: str, limits: LimitSettings) -> str:
    """Return ``session`` unchanged if it is a usable session name.

    Raises:
        InvalidInput: empty or whitespace-only, longer than ``max_session_chars``, or holding a
            control character (U+0000-U+001F, U+007F-U+009F).
    """
    if not session or not session.strip():
        raise InvalidInput("session", "must not be empty or whitespace-only")
    if len(session) > limits.max_session_chars:
        raise InvalidInput(
            "session", f"is {len(session)} characters; the limit is {limits.max_session_chars} characters"
        )
    if any(unicodedata.category(ch) == "Cc" for ch in session):
        raise InvalidInput("session", "must not contain control characters (U+0000-U+001F, U+007F-U+009F)")
    return session


def check_text(field: str, text: str, max_chars: int) -> str:
    """Return ``text`` unchanged if it is non-blank, within ``max_chars`` and free of NUL.

    The limit counts characters (code points), not UTF-8 bytes.

    Raises:
        InvalidInput: naming ``field`` for blank text, text over the limit (with both
            lengths), or a NUL character, which PostgreSQL text cannot store.
    """
    if not text or not text.strip():
        raise InvalidInput(field, "must not be empty or whitespace-only")
    if len(text) > max_chars:
        raise InvalidInput(field, f"is {len(text)} characters; the limit is {max_chars} characters")
    if "\x00" in text:
        raise InvalidInput(field, "contains a NUL character (U+0000), which cannot be stored; remove it")
    return text


def check_top_k(top_k: int, limits: LimitSettings) -> int:
    """Return ``top_k`` if it lies in 1..max_top_k.

    Raises:
        InvalidInput: outside the range (never sliced Python-style).
    """
    if not 1 <= top_k <= limits.max_top_k:
        raise InvalidInput("top_k", f"must be in the range 1..{limits.max_top_k}; got {top_k}")
    return top_k


def check_memory_id(memory_id: str) -> str:
    """Return the canonical lower-case UUID text of ``memory_id``.

    Raises:
        InvalidInput: not a UUID such as ``0b6f1c2e-3d4a-4f5b-8c6d-7e8f9a0b1c2d``.
    """
    try:
        return str(uuid.UUID(memory_id))
    except (ValueError, AttributeError, TypeError):
        raise InvalidInput("memory_id", f"must be a memory_id as returned by store_memory (a UUID); got {memory_id!r}")


MAX_IDEMPOTENCY_KEY_CHARS = 128


def check_idempotency_key(key: str | None) -> str | None:
    """Return ``key`` unchanged (None when not given) if it is a usable idempotency key.

    Raises:
        InvalidInput: empty, longer than 128 characters, or holding a control character.
    """
    if key is None:
        return None
    if not key:
        raise InvalidInput("idempotency_key", f"must be 1..{MAX_IDEMPOTENCY_KEY_CHARS} characters; got an empty string")
    if len(key) > MAX_IDEMPOTENCY_KEY_CHARS:
        raise InvalidInput(
            "idempotency_key", f"is {len(key)} characters; the limit is {MAX_IDEMPOTENCY_KEY_CHARS} characters"
        )
    if any(unicodedata.category(ch) == "Cc" for ch in key):
        raise InvalidInput("idempotency_key", "must not contain control characters (U+0000-U+001F, U+007F-U+009F)")
    return key


def check_supersedes(supersedes: Any, limits: LimitSettings) -> tuple[str, ...]:
    """Return the canonical lower-case UUIDs of ``supersedes``, each once, in the order given.

    Only the form is checked here; that each id is a memory of the caller's session (and not
    the memory being stored) is checked by the repository inside the insert's transaction.

    Raises:
        InvalidInput: not a list, more than ``max_supersedes`` items (duplicates counted), or an
            item that is not a UUID string.
    """
    if supersedes is None:
        return ()
    if not isinstance(supersedes, list):
        raise InvalidInput("supersedes", "must be a list of memory_ids (UUIDs) of this session")
    if len(supersedes) > limits.max_supersedes:
        raise InvalidInput("supersedes", f"has {len(supersedes)} ids; the limit is {limits.max_supersedes}")
    found: dict[str, None] = {}
    for index, item in enumerate(supersedes):
        try:
            if not isinstance(item, str):
                raise TypeError
            found[str(uuid.UUID(item))] = None
        except (ValueError, TypeError):
            shown = repr(item) if len(repr(item)) <= 80 else repr(item)[:77] + "..."
            raise InvalidInput(
                "supersedes", f"item {index} must be a memory_id as returned by store_memory (a UUID); got {shown}"
            ) from None
    return tuple(found)


def parse_occurred_at(value: str | None, now: datetime | None = None, field: str = "occurred_at") -> datetime:
    """Parse an ISO 8601 date or date-time; a value with no zone is UTC; None means now.

    ``field`` is the argument named in the error (``occurred_at`` of store_memory, ``as_of`` of
    recall_memory).

    Examples: ``2025-03-14T23:30:00+09:00`` keeps its instant, ``2025-03-14T23:30:00`` is
    23:30 UTC, ``2025-03-14`` is midnight UTC. The host's time zone is never consulted.

    Returns:
        A timezone-aware datetime.

    Raises:
        InvalidInput: the text is not ISO 8601, or its instant falls outside years 1..9999 in UTC.
    """
    if value is None:
        return now or datetime.now(UTC)
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        if _ISO_SHAPE.fullmatch(text):  # the form is right, a field is not: say which ("2023-02-30")
            reason = "the UTC offset must be less than 24 hours" if "offset" in str(exc) else str(exc)
            raise InvalidInput(field, f"{value!r} is not a real date or time: {reason}") from None
        raise InvalidInput(
            field, f"could not parse {value!r} as ISO 8601; use e.g. 2025-03-14T09:30:00+01:00 or 2025-03-14"
        ) from None
    if len(text) == 10:  # a bare date parses as midnight
        parsed = datetime.combine(parsed.date(), time(0))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        utc = parsed.astimezone(UTC).replace(tzinfo=None)  # stored as UTC: 0001-01-01T00:00+14:00 is before year 1 there
    except OverflowError:
        raise InvalidInput(
            field, f"{value!r} is outside 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z once in UTC"
        ) from None
    if utc in (datetime.min, datetime.max):  # asyncpg writes these as -infinity/infinity and reads them back naive
        raise InvalidInput(field, f"{value!r} is PostgreSQL's -infinity or infinity once in UTC; use a time "
                           "after 0001-01-01T00:00:00Z and before 9999-12-31T23:59:59.999999Z")
    return parsed


# NUL's escape in JSON text: "\u0000" after an even number of backslashes (none, or escaped backslashes),
# so that a string holding a backslash and then "u0000" (encoded "\\u0000") is not taken for one.
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def json_holds_nul(encoded: str) -> bool:
    """Whether JSON text from ``json.dumps`` holds a NUL (U+0000) in a key or string, which
    PostgreSQL's jsonb cannot store; a backslash written before "u0000" is text, not a NUL."""
    return "\x00" in encoded or ("\\u0000" in encoded and _JSON_NUL.search(encoded) is not None)


def check_metadata(metadata: dict[str, Any] | None, limits: LimitSettings) -> dict[str, Any]:
    """Return ``metadata`` (or ``{}``) if it is a JSON object within ``max_metadata_bytes``.

    Raises:
        InvalidInput: not an object, not JSON-serialisable, over the size limit (UTF-8 bytes
            of its compact JSON), or holding a NUL character.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata", "must be a JSON object")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("metadata", f"must be plain JSON ({exc})") from None
    size = len(encoded.encode())
    if size > limits.max_metadata_bytes:
        raise InvalidInput("metadata", f"is {size} bytes as JSON; the limit is {limits.max_metadata_bytes} bytes")
    if json_holds_nul(encoded):
        raise InvalidInput("metadata", "contains a NUL character (U+0000), which cannot be stored; remove it")
    return metadata


def new_memory(
    session: str,
    content: str,
    occurred_at: str | None,
    metadata: dict[str, Any] | None,
    importance: float | None,
    limits: LimitSettings,
    supersedes: Any = None,
    idempotency_key: str | None = None,
    secrets: SecretsPolicy = "redact",
) -> NewMemory:
    """Validate every store_memory argument and build the memory to store.

    Secrets in the content and in metadata strings are then handled as ``secrets``
    (``privacy.secrets``) says: replaced by ``[redacted: <kind>]`` (listed in ``redactions``),
    refused, or kept. What is hashed, stored and embedded is the redacted text.

    ``request_hash`` fingerprints the arguments (secrets redacted; an omitted ``occurred_at``
    counts as omitted, not as the time of this call), so a retry of the same call matches it.

    Raises:
        InvalidInput: the first argument that breaks a rule, by name; under refuse, a secret.
    """
    if importance is not None and not 0.0 <= importance <= 1.0:
        raise InvalidInput("importance", f"must be in the range 0..1; got {importance}")
    checked_session = check_session(session, limits)
    checked_content = check_text("content", content, limits.max_content_chars)
    instant = parse_occurred_at(occurred_at)
    checked_metadata = check_metadata(metadata, limits)
    checked_supersedes = check_supersedes(supersedes, limits)
    key = check_idempotency_key(idempotency_key)
    content, redactions = screen("content", checked_content, secrets)
    checked_metadata, in_metadata = screen_metadata(checked_metadata, secrets)
    request = json.dumps(
        [content, instant.astimezone(UTC).isoformat() if occurred_at is not None else None, checked_metadata,
         importance, sorted(checked_supersedes)],
        sort_keys=True,
    )
    return NewMemory(
        session=checked_session,
        content=content,
        occurred_at=instant,
        metadata=checked_metadata,
        importance=importance,
        content_hash=hashlib.sha256(content.encode()).digest(),
        supersedes=checked_supersedes,
        idempotency_key=key,
        request_hash=hashlib.sha256(request.encode()).digest(),
        redactions=(*redactions, *in_metadata),
    )
