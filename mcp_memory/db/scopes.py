"""A session scope (``access.scope.SessionScope``) in SQL: one condition and its three parameters.

``$1`` every session (boolean), ``$2`` exact session names, ``$3`` prefixes; a statement that takes a
scope puts ``in_scope(column)`` in its WHERE and passes ``*scope_args(scope)`` first. Used by the
statements that read or write many sessions on purpose (usage totals, the page's session list,
export, redact's audit sweep).
"""

from __future__ import annotations

from mcp_memory.access.scope import SessionScope

__all__ = ["in_scope", "scope_args"]


def in_scope(column: str = "session") -> str:
    """The condition that ``column`` names a session of the scope passed as ``$1, $2, $3``."""
    return (f"($1::boolean OR {column} = ANY($2::text[])"
            f" OR EXISTS (SELECT 1 FROM unnest($3::text[]) AS p(prefix) WHERE starts_with({column}, p.prefix)))")


def scope_args(scope: SessionScope) -> tuple[bool, list[str], list[str]]:
    """``$1, $2, $3`` of ``in_scope`` for ``scope``."""
    return scope.everything, sorted(scope.exact), list(scope.prefixes)
