"""Which sessions a caller may touch: session patterns, matched exactly.

A pattern is an exact session name (``team:alpha:notes``), a prefix ending in ``*``
(``team:alpha:*`` matches every session that starts with ``team:alpha:``), or ``*`` alone
(every session). Nothing else is special: ``%``, ``_``, ``?``, backslashes and quotes are
ordinary characters, and matching is by code point (no case folding, no Unicode normalisation),
so ``a`` and ``A`` are different sessions.

A session name is a label, never a credential: the scope comes from the caller's token (HTTP)
or from the operator's config (stdio), never from anything a tool argument says.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass

from mcp_memory.errors import ConfigError

__all__ = ["ALL_SESSIONS", "SessionScope", "add_scope_arguments", "command_scope"]


@dataclass(frozen=True)
class SessionScope:
    """A set of sessions given by patterns.

    Attributes:
        exact: session names matched whole.
        prefixes: session-name prefixes (each pattern without its trailing ``*``).
        everything: True when the pattern ``*`` was given.
    """

    exact: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    everything: bool = False

    @classmethod
    def parse(cls, patterns: Iterable[str]) -> SessionScope:
        """Build a scope from patterns.

        Raises:
            ValueError: a pattern is empty, or has a ``*`` anywhere but at its end.
        """
        exact: set[str] = set()
        prefixes: list[str] = []
        everything = False
        for pattern in patterns:
            if not pattern:
                raise ValueError("a session pattern must not be empty")
            if "*" in pattern[:-1]:
                raise ValueError(f"session pattern {pattern!r}: '*' may only end a pattern")
            if pattern == "*":
                everything = True
            elif pattern.endswith("*"):
                prefixes.append(pattern[:-1])
            else:
                exact.add(pattern)
        return cls(frozenset(exact), tuple(sorted(set(prefixes))), everything)

    def allows(self, session: str) -> bool:
        """True when ``session`` is one of the scope's sessions."""
        return self.everything or session in self.exact or any(session.startswith(p) for p in self.prefixes)

    def patterns(self) -> list[str]:
        """The scope written back as patterns, sorted (for logs, audits and ``doctor``)."""
        if self.everything:
            return ["*"]
        return sorted(self.exact) + [prefix + "*" for prefix in self.prefixes]


ALL_SESSIONS = SessionScope(everything=True)


def command_scope(session: str | None, sessions_like: str | None, everything: bool) -> SessionScope:
    """The sessions a command (export, redact) names with ``--session``, ``--sessions-like`` or ``--all``.

    Raises:
        ConfigError: ``--session`` holds a pattern, or ``--sessions-like`` is not a valid one.
    """
    if session is not None and "*" in session:
        raise ConfigError("--session takes an exact name; use --sessions-like for a pattern")
    pattern = "*" if everything else session if session is not None else sessions_like
    try:
        return SessionScope.parse([pattern or ""])
    except ValueError as exc:
        raise ConfigError(f"--sessions-like: {exc}") from None


def add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    """``--session``, ``--sessions-like`` and ``--all`` (one of them required), read by ``command_scope``."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", help="one session, by its exact name")
    which.add_argument("--sessions-like", metavar="PATTERN",
                       help="sessions by pattern: an exact name or a prefix ending in '*' (team:*)")
    which.add_argument("--all", action="store_true", help="every session")
