"""Bearer tokens for the HTTP transport: static tokens from config, and OAuth access tokens.

Both are the MCP SDK's ``TokenVerifier``; the SDK's bearer middleware answers 401 (with a
``WWW-Authenticate`` challenge) to a request whose token is missing, malformed, unknown or
expired, before anything runs. Each verified token carries the ``Caller`` the tools check
(``mcp_memory.access.gate``). OAuth discovery (RFC 9728 protected-resource metadata) is served only
when ``[auth.oauth]`` is set: a client that finds discovery metadata ignores the bearer header
it was configured with, so a static-token-only server must advertise none.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from mcp.server.auth.settings import AuthSettings as SdkAuthSettings
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory.access.scope import SessionScope
from mcp_memory.access.gate import Caller, CallerToken
from mcp_memory.http.oauth import OAuthVerifier
from mcp_memory.settings import AuthSettings, Settings, TokenSettings

__all__ = [
    "OneAuthorization", "StaticTokens", "TokenVerifier", "describe_auth", "new_token", "sdk_auth", "token_entry",
    "token_env_line", "token_verifier",
]


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
    """The SDK's ``TokenVerifier``: a static token first, then an OAuth access token when configured."""

    def __init__(self, static: StaticTokens, oauth: OAuthVerifier | None) -> None:
        self.static = static
        self.oauth = oauth

    async def verify_token(self, token: str) -> CallerToken | None:
        """The verified token with its Caller, or None (the SDK then answers HTTP 401)."""
        if not token or len(token) > 16_384:
            return None
        found = self.static.find(token)
        if found is None and self.oauth is not None:
            found = await self.oauth.verify(token)
        return found


class OneAuthorization:
    """ASGI middleware: a request with more than one ``Authorization`` header gets 401 and runs nothing.

    The SDK reads the first; a proxy in front may check the last. Credentials that two readers can
    read differently are refused rather than guessed at (RFC 9110 allows one such field).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and sum(name == b"authorization" for name, _ in scope["headers"]) > 1:
            body = b'{"error": "invalid_request", "error_description": "send one Authorization header"}'
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer error="invalid_request"')]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def token_verifier(auth: AuthSettings) -> TokenVerifier | None:
    """The verifier for these settings, or None when HTTP has no authentication."""
    if not auth.enabled:
        return None
    scopes = auth.oauth.required_scopes if auth.oauth else []
    return TokenVerifier(StaticTokens(auth.tokens, scopes), OAuthVerifier(auth.oauth) if auth.oauth else None)


def sdk_auth(auth: AuthSettings) -> SdkAuthSettings | None:
    """The SDK's AuthSettings for these settings, or None when HTTP has no authentication.

    With ``[auth.oauth]``: the resource URL (RFC 9728 metadata at
    ``/.well-known/oauth-protected-resource/...`` and in the 401 challenge), the issuer as the
    authorization server, the required scopes (403 ``insufficient_scope`` without them).
    Static tokens alone: no resource URL, so the SDK serves no discovery route and its 401
    challenge names no metadata; the issuer URL it requires is then never served or sent.
    """
    if not auth.enabled:
        return None
    oauth = auth.oauth
    if oauth is None:
        return SdkAuthSettings(issuer_url="http://localhost", resource_server_url=None)  # type: ignore[arg-type]
    return SdkAuthSettings(
        issuer_url=oauth.issuer,  # type: ignore[arg-type]
        resource_server_url=oauth.resource_url,  # type: ignore[arg-type]
        required_scopes=oauth.required_scopes or None,
        validate_token_resource=False,  # OAuthVerifier checks aud itself
    )


def new_token() -> str:
    """A fresh random bearer token: 32 bytes from ``secrets``, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def _toml_string(value: str) -> str:
    """``value`` as a TOML basic string: JSON's escapes are TOML's, but TOML also forbids a raw DEL (U+007F)."""
    import json

    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def token_entry(token: str, name: str, sessions: list[str], can_delete: bool, rate_limit_per_minute: int | None) -> str:
    """The ``[[auth.tokens]]`` TOML entry for ``token`` (its SHA-256 only)."""
    lines = [
        "[[auth.tokens]]",
        f"name = {_toml_string(name)}",
        f'token_sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"',
        f"sessions = [{', '.join(_toml_string(p) for p in sessions)}]",
        f"can_delete = {'true' if can_delete else 'false'}",
    ]
    if rate_limit_per_minute is not None:
        lines.append(f"rate_limit_per_minute = {rate_limit_per_minute}")
    return "\n".join(lines)


def token_env_line(token: str, name: str, sessions: list[str], can_delete: bool, rate_limit_per_minute: int | None) -> str:
    """The same entry as ``token_entry`` as one env file line, ``MCP_MEMORY_AUTH__TOKENS='[{...}]'``.

    pydantic-settings reads a JSON list from that variable into ``auth.tokens`` (docker-compose.yml
    passes it from .env). The JSON is single-quoted, which env files and shells take as it is; a
    ``'`` in the name is written as the JSON escape ``\\u0027``, so the quotes always pair.
    """
    import json

    entry: dict[str, object] = {"name": name, "token_sha256": hashlib.sha256(token.encode()).hexdigest(),
                                "sessions": sessions, "can_delete": can_delete}
    if rate_limit_per_minute is not None:
        entry["rate_limit_per_minute"] = rate_limit_per_minute
    body = json.dumps([entry]).replace("'", "\\u0027")
    return f"MCP_MEMORY_AUTH__TOKENS='{body}'"


def describe_auth(settings: Settings) -> list[str]:
    """``doctor``'s lines about who may call: token names and their patterns, never a secret.

    A token kept in plain text (``token = ...``) gets a warning with the ``token_sha256`` line
    to put in its place (a hash, which is what the config should hold anyway).
    """
    auth = settings.auth
    lines = [f"stdio sessions: {', '.join(SessionScope.parse(settings.stdio.sessions).patterns())}"]
    if not auth.enabled:
        lines.append("http auth: none (only a loopback --host, or --insecure-no-auth)")
    for entry in auth.tokens:
        scope = SessionScope.parse(entry.sessions).patterns()
        rate = f", {entry.rate_limit_per_minute} calls/min" if entry.rate_limit_per_minute else ""
        lines.append(f"token {entry.name!r}: sessions {', '.join(scope)}; "
                     f"{'can' if entry.can_delete else 'cannot'} delete{rate}")
        if entry.token is not None:
            lines.append(f"WARNING: token {entry.name!r} is kept in plain text in the config; replace its token "
                         f'line with token_sha256 = "{hashlib.sha256(entry.token.encode()).hexdigest()}"')
    if auth.oauth is not None:
        o = auth.oauth
        lines.append(f"oauth: issuer {o.issuer}, audience {o.audience}, resource {o.resource_url}, "
                     f"{'jwks ' + o.jwks_url if o.jwks_url else 'introspection ' + str(o.introspection_url)}; "
                     f"sessions {', '.join(o.sessions)}; scopes {', '.join(o.required_scopes) or 'none required'}")
    return lines
