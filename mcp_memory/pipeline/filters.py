"""Recall's filters: ``since``, ``until`` and ``metadata`` checked into a ``RecallFilter``.

Each check raises ``InvalidInput`` naming the field before anything is searched. Times are RFC 3339
date-times with an offset (``2024-03-01T09:30:00+01:00``, ``2024-03-01T08:30:00Z``) or dates
(``2024-03-01``, a UTC day): a date as ``since`` is the start of that day, as ``until`` its end, so
``until=2024-03-01`` keeps everything of March 1st. A date-time without an offset is refused rather
than guessed. Metadata values are JSON scalars matched exactly (``1`` and ``1.0`` are equal numbers;
``true``, ``1`` and ``"1"`` are three different values); a key must be present to match, also for null.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_memory.errors import InvalidInput
from mcp_memory.models import RecallFilter, TimeWindow
from mcp_memory.pipeline.validate import json_holds_nul
from mcp_memory.settings import LimitSettings

__all__ = ["check_filter", "inside", "parse_bound"]

# re.ASCII: \d is 0-9 only; Python's ISO parser reads no other digits (２０２４ is no date, not one out of range)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
# RFC 3339 section 5.6: full-date "T" full-time, the offset required; a space for the T is allowed (its note).
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.(\d+))?(?:[Zz]|[+-]\d{2}:\d{2})", re.ASCII)
_NO_OFFSET = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?", re.ASCII)
_LAST_MICROSECOND = timedelta(days=1, microseconds=-1)
_SCALARS = (str, int, float, bool, type(None))


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 60 else repr(value[:57] + "...")


def parse_bound(field: str, value: str, end_of_day: bool) -> datetime:
    """``value`` (RFC 3339 date-time or date) as a UTC instant; a date is its day's first microsecond,
    or with ``end_of_day`` its last. A leap second (``23:59:60Z``) is the next second's start, or with
    ``end_of_day`` the last microsecond before it.

    Raises:
        InvalidInput: naming ``field``: not RFC 3339 or a date, no offset, or outside years 1..9999 in UTC.
    """
    text = value.strip()
    try:
        if _DATE.fullmatch(text):
            day = datetime.fromisoformat(text).replace(tzinfo=UTC)
            return day + _LAST_MICROSECOND if end_of_day else day
        if match := _DATE_TIME.fullmatch(text):
            # Python 3.11 reads Z and fractions of any length (cut to microseconds), not a lower-case t or z
            if text[17:19] == "60":  # a leap second, which Python cannot hold and no stored time falls in
                zone = text[19:].upper().lstrip(".0123456789")  # the fraction of the leap second goes too
                last = datetime.fromisoformat(text[:10] + "T" + text[11:17] + "59" + zone)
                return (last + timedelta(microseconds=999_999 if end_of_day else 1_000_000)).astimezone(UTC)
            instant = datetime.fromisoformat(text[:10] + "T" + text[11:].upper()).astimezone(UTC)
            if not end_of_day and (match.group(1) or "").ljust(6, "0")[6:].strip("0"):
                instant += timedelta(microseconds=1)  # since .0000005 starts after .000000, not at it
            return instant
    except (ValueError, OverflowError):
        raise InvalidInput(field, f"not a valid time or date, or outside 0001..9999 in UTC: {_shown(value)}") from None
    if _NO_OFFSET.fullmatch(text):
        raise InvalidInput(field, f"needs a UTC offset (Z or +01:00) or a plain date: {_shown(value)}")
    raise InvalidInput(
        field, f"not an RFC 3339 time or a date: {_shown(value)}; use e.g. 2024-03-01T09:30:00Z or 2024-03-01"
    )


def check_filter(
    since: str | None, until: str | None, metadata: dict[str, Any] | None, limits: LimitSettings
) -> RecallFilter:
    """The recall filter the caller asked for, checked and normalised to UTC.

    Raises:
        InvalidInput: ``since`` or ``until`` unreadable (see ``parse_bound``), ``until`` before
            ``since``, or ``metadata`` not an object of JSON scalars within ``max_metadata_bytes``
            (keys and string values without NUL).
    """
    start = parse_bound("since", since, end_of_day=False) if since is not None else None
    end = parse_bound("until", until, end_of_day=True) if until is not None else None
    if start is not None and end is not None and end < start:
        raise InvalidInput("until", f"is before since ({end.isoformat()} < {start.isoformat()}); nothing was searched")
    return RecallFilter(since=start, until=end, metadata=_checked_metadata(metadata, limits))


def _checked_metadata(metadata: dict[str, Any] | None, limits: LimitSettings) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata", "must be a JSON object of keys and the values they must hold")
    for key, value in metadata.items():
        if not isinstance(value, _SCALARS) or (isinstance(value, float) and value != value):
            raise InvalidInput("metadata", f"value of {json.dumps(key)[:80]} must be a string, number, boolean or null")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        raise InvalidInput("metadata", f"must be plain JSON ({exc})") from None
    if len(encoded.encode()) > limits.max_metadata_bytes:
        raise InvalidInput("metadata", f"is {len(encoded.encode())} bytes as JSON; the limit is {limits.max_metadata_bytes}")
    if json_holds_nul(encoded):
        raise InvalidInput("metadata", "contains a NUL character (U+0000), which no stored memory can hold; remove it")
    return dict(metadata)


def inside(filters: RecallFilter | None, window: TimeWindow) -> RecallFilter:
    """The caller's filter narrowed to the time window: occurred_at within both, metadata kept.

    A window that misses the filter's span gives since > until, which no memory passes.
    """
    if filters is None:
        return RecallFilter(since=window.start, until=window.end)
    since = window.start if filters.since is None else max(filters.since, window.start)
    until = window.end if filters.until is None else min(filters.until, window.end)
    return RecallFilter(since=since, until=until, metadata=filters.metadata)
