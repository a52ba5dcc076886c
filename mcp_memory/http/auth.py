"""Bearer tokens for the HTTP transport: static tokens from config, and OAuth access tokens.

Both are the MCP SDK's ``TokenVerifier``; the SDK's bearer middleware answers 401 (with a
``WWW-Authenticate`` challenge) to a request whose token is missing, malformed, unknown or
expired, before anything runs. Each verified token carries the ``Caller`` the tools check
(``mcp_memory.gate``). OAuth discovery (RFC 9728 protected-resource metadata) is served only
when ``[auth.oauth]`` is set: a client that finds discovery metadata ignores the bearer header
it was configured with, so a static-token-only server must advertise none.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from mcp.server.auth.settings import AuthSettings as SdkAuthSettings

from mcp_memory.access import SessionScope
from mcp_memory.gate import Caller, CallerToken
from mcp_memory.settings import AuthSettings, TokenSettings

__all__ = ["StaticTokens", "TokenVerifier", "new_token", "sdk_auth", "token_entry", "token_verifier"]


def _digest(token: str) -> bytes:
    # Header values arrive as latin-1 text; any str encodes, so a malformed token is just unknown.
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class StaticTokens:
    """The ``[[auth.tokens]]`` entries: SHA-256 of the bearer, compared in constant time.

    Every entry is compared (``hmac.compare_digest``, no early exit), so the time taken does not
    say which entry, or how much of a digest, matched.
    """

    def __init__(self, tokens: list[TokenSettings], scopes: list[str]) -> None:
        self._entries: list[tuple[bytes, Caller]] = []
        for entry in tokens:
            digest = bytes.fromhex(entry.token_sha256) if entry.token_sha256 else _digest(entry.token or "")
            caller = Caller(entry.name, SessionScope.parse(entry.sessions), entry.can_delete, entry.rate_limit_per_minute)
            self._entries.append((digest, caller))
        self._scopes = scopes  # static tokens are trusted by the operator: they hold OAuth's required scopes

    def find(self, token: str) -> CallerToken | None:
        """The caller of ``token``, or None when no entry matches."""
        digest = _digest(token)
        found: Caller | None = None
        for expected, caller in self._entries:
            if hmac.compare_digest(digest, expected):
                found = caller
        if found is None:
            return None
        return CallerToken(token=digest.hex(), client_id=f"token:{found.name}", scopes=list(self._scopes), caller=found)


class TokenVerifier:
    """The SDK's ``TokenVerifier`` over the static tokens."""

    def __init__(self, static: StaticTokens) -> None:
        self.static = static

    async def verify_token(self, token: str) -> CallerToken | None:
        """The verified token with its Caller, or None (the SDK then answers HTTP 401)."""
        if not token or len(token) > 16_384:
            return None
        return self.static.find(token)


def token_verifier(auth: AuthSettings) -> TokenVerifier | None:
    """The verifier for these settings, or None when HTTP has no authentication."""
    if not auth.enabled:
        return None
    return TokenVerifier(StaticTokens(auth.tokens, []))


def sdk_auth(auth: AuthSettings) -> SdkAuthSettings | None:
    """The SDK's AuthSettings for these settings, or None when HTTP has no authentication.

    Static tokens: no resource URL, so the SDK serves no discovery route and its 401 challenge
    names no metadata; the issuer URL it requires is then never served or sent.
    """
    if not auth.enabled:
        return None
    return SdkAuthSettings(issuer_url="http://localhost", resource_server_url=None)  # type: ignore[arg-type]


def new_token() -> str:
    """A fresh random bearer token: 32 bytes from ``secrets``, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def token_entry(token: str, name: str, sessions: list[str], can_delete: bool, rate_limit_per_minute: int | None) -> str:
    """The ``[[auth.tokens]]`` TOML entry for ``token`` (its SHA-256 only)."""
    import json

    lines = [
        "[[auth.tokens]]",
        f"name = {json.dumps(name, ensure_ascii=False)}",
        f'token_sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"',
        f"sessions = [{', '.join(json.dumps(p, ensure_ascii=False) for p in sessions)}]",
        f"can_delete = {'true' if can_delete else 'false'}",
    ]
    if rate_limit_per_minute is not None:
        lines.append(f"rate_limit_per_minute = {rate_limit_per_minute}")
    return "\n".join(lines)
