"""A recall filter as SQL: the condition a row of ``memories`` must meet, with its bind values.

Every list recall fuses applies it before its own LIMIT (never to what a cut left), so a filtered
list is as deep as an unfiltered one whenever the session holds enough memories that pass. With no
filter each statement is the same text as before, so an unfiltered recall runs the plans it always ran.

``metadata @> $n::jsonb`` is exact for the scalar values ``pipeline.filters`` admits: a scalar in an
object never matches an array or object holding it, numbers compare as numbers, and a key must be
present (also to match null).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_memory.models import RecallFilter

__all__ = ["Condition", "among", "condition"]


class Condition:
    """`` AND ...`` on a memories row (``sql``, empty without a filter) and its values (``values``),
    numbered from the first parameter the statement leaves free."""

    __slots__ = ("sql", "values")

    def __init__(self, sql: str, values: list[Any]) -> None:
        self.sql = sql
        self.values = values

    def __bool__(self) -> bool:
        return bool(self.sql)


def condition(filters: RecallFilter | None, alias: str, first: int) -> Condition:
    """The filter as `` AND <alias>.occurred_at >= $first ...``; parameters ``$first`` onwards.

    Args:
        filters: None or an empty filter give an empty condition.
        alias: the name of the memories row in the statement.
        first: the number of the statement's first free parameter.
    """
    if filters is None or filters.empty:
        return Condition("", [])
    parts: list[str] = []
    values: list[Any] = []
    for column, operator, value in (
        ("occurred_at", ">=", filters.since),
        ("occurred_at", "<=", filters.until),
    ):
        if value is not None:
            values.append(value)
            parts.append(f"{alias}.{column} {operator} ${first + len(values) - 1}")
    if filters.metadata:
        values.append(json.dumps(filters.metadata, ensure_ascii=False))
        parts.append(f"{alias}.metadata @> ${first + len(values) - 1}::jsonb")
    return Condition("".join(f" AND {part}" for part in parts), values)


def among(filters: RecallFilter | None, column: str, first: int) -> Condition:
    """The filter on a table that only names memories (postings, grams): `` AND <column> IN (the
    memory_ids of session $1 that pass)``; the planner hashes that set once or probes it per row."""
    inner = condition(filters, "f", first)
    if not inner:
        return inner
    return Condition(f" AND {column} IN (SELECT f.memory_id FROM memories f WHERE f.session = $1{inner.sql})", inner.values)
