"""Who is calling, and may they do this now: the one check every tool makes before it runs.

The caller comes from the verified bearer token of the HTTP request (``CallerToken``, set by
``mcp_memory.http.auth``), or, with no token, from the transport's default: stdio's
``[stdio] sessions`` patterns, or every session for HTTP without authentication. A session
name is a label, never a credential: nothing a tool argument says widens the caller's scope.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from mcp_memory.access.scope import ALL_SESSIONS, SessionScope
from mcp_memory.errors import Forbidden, RateLimited
from mcp_memory.settings import Settings

__all__ = ["Caller", "CallerToken", "Gate", "RateLimiter"]


@dataclass(frozen=True)
class Caller:
    """A caller and what it may do.

    Attributes:
        name: the token's name (``oauth:<iss>#<sub>`` for OAuth, ``stdio``, ``anonymous``); logs and
            rate-limit buckets use it, error messages do not.
        scope: the sessions it may read and write.
        can_delete: may call ``delete_memory``, and mark memories superseded (``store_memory``'s
            ``supersedes``, and the LLM's supersession on its stores), which hides them from
            ordinary recall.
        rate_limit_per_minute: tool calls per minute, or None for no limit.
    """

    name: str
    scope: SessionScope
    can_delete: bool = True
    rate_limit_per_minute: int | None = None


class CallerToken(AccessToken):
    """The SDK's AccessToken carrying the Caller our verifiers decided on."""

    caller: Caller


@dataclass
class RateLimiter:
    """Token buckets per caller name: ``limit`` calls per minute, refilled continuously.

    A full bucket holds ``limit`` calls, so a caller may burst up to its whole minute at once.
    ``clock`` returns seconds (monotonic); tests of the refill pass their own.
    """

    clock: Callable[[], float] = time.monotonic
    max_callers: int = 100_000  # past this many buckets, the full ones are forgotten (a new one is full too)
    _buckets: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # name -> (calls left, at, limit)

    def take(self, name: str, limit: int) -> int:
        """Spend one call of ``name``'s bucket; returns 0, or the whole seconds until one is free (nothing spent)."""
        now = self.clock()
        left, at, _ = self._buckets.get(name, (float(limit), now, limit))
        left = min(float(limit), left + (now - at) * limit / 60.0)
        if left < 1.0:
            self._buckets[name] = (left, now, limit)
            return max(1, math.ceil((1.0 - left) * 60.0 / limit))
        self._buckets[name] = (left - 1.0, now, limit)
        if len(self._buckets) > self.max_callers:  # many OAuth subjects over time: forget the full buckets
            self._buckets = {k: (n, t, per) for k, (n, t, per) in self._buckets.items()
                             if n + (now - t) * per / 60.0 < per}
        return 0


class Gate:
    """Decides, per tool call, whether the caller may use a session.

    Args:
        default: the caller when the request carries no verified token (stdio, or HTTP without
            authentication); None when every caller must present a token (HTTP with auth).
    """

    def __init__(self, default: Caller | None) -> None:
        self.default = default
        self.limiter = RateLimiter()

    @classmethod
    def for_stdio(cls, settings: Settings) -> Gate:
        """Stdio: no token; the sessions of ``[stdio] sessions`` (default ``*``)."""
        return cls(Caller("stdio", SessionScope.parse(settings.stdio.sessions)))

    @classmethod
    def for_http(cls, settings: Settings) -> Gate:
        """HTTP: the verified token's caller when auth is configured, otherwise every session."""
        return cls(None if settings.auth.enabled else Caller("anonymous", ALL_SESSIONS))

    def caller(self) -> Caller:
        """The caller of the tool call being served.

        Raises:
            Forbidden: auth is configured and the request carries no verified token (the
                HTTP layer answers 401 first, so this only guards against a wiring mistake).
        """
        token = get_access_token()
        if isinstance(token, CallerToken):
            return token.caller
        if self.default is None:
            raise Forbidden("this server needs a bearer token (Authorization: Bearer ...); nothing was done")
        return self.default

    def admit(self, session: str | None, *, delete: bool = False, supersede: bool = False) -> Caller:
        """Check the caller before a tool does anything; returns the caller.

        Args:
            session: the session the tool names, or None for a tool that names none (usage_stats).
            delete: the tool deletes memories (needs ``can_delete``).
            supersede: the call names memories to mark superseded (needs ``can_delete`` too: a
                superseded memory leaves ordinary recall, so marking is a soft delete).

        Raises:
            RateLimited: over the token's calls per minute; the message says when to retry.
            Forbidden: the session is outside the token's patterns (the message names the caller's own
                patterns, so an agent can pick a session it may use, never the session asked for), or
                ``delete`` or ``supersede`` without ``can_delete``.
        """
        caller = self.caller()
        if caller.rate_limit_per_minute is not None:
            wait_s = self.limiter.take(caller.name, caller.rate_limit_per_minute)
            if wait_s:
                raise RateLimited(
                    f"rate limit: this token may make {caller.rate_limit_per_minute} calls per minute; "
                    f"retry in {wait_s} s; nothing was done", wait_s)
        if session is not None and not caller.scope.allows(session):
            if caller.name == "stdio":
                raise Forbidden("session: this session is outside [stdio] sessions in the server's config; "
                                f"nothing was read or changed; it may use {_shown(caller.scope)}")
            raise Forbidden("session: this token may not use this session; nothing was read or changed; "
                            f"it may use {_shown(caller.scope)}")
        if delete and not caller.can_delete:
            raise Forbidden("delete_memory: this token may not delete memories (it has no can_delete); "
                            "nothing was deleted")
        if supersede and not caller.can_delete:
            raise Forbidden("supersedes: this token may not mark memories superseded (that needs can_delete, since "
                            "it hides them from recall); nothing was stored")
        return caller


def _shown(scope: SessionScope, at_most: int = 5) -> str:
    """The caller's own session patterns for a refusal: ``sessions matching 'team:alpha:*'``; at most
    ``at_most`` of them, quoted so that an invisible character shows."""
    patterns = scope.patterns()
    if not patterns:
        return "no session"
    shown = ", ".join(repr(pattern) for pattern in patterns[:at_most])
    more = f" and {len(patterns) - at_most} more" if len(patterns) > at_most else ""
    return f"sessions matching {shown}{more}"
