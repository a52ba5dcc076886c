"""Who may call, and over which transport: the ``[auth]`` (static tokens, OAuth), ``[http]`` and
``[stdio]`` groups of the settings (settings.py holds the rest and the ``Settings`` class)."""

from __future__ import annotations

import hashlib
import re
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from mcp_memory.setting_values import SettingsGroup

__all__ = [
    "AuthSettings", "HttpSettings", "MetricsSettings", "OAuthSettings", "SessionPatterns", "StdioSettings", "TokenSettings",
]


def _session_patterns(patterns: list[str]) -> list[str]:
    from mcp_memory.access.scope import SessionScope

    SessionScope.parse(patterns)  # raises ValueError naming the bad pattern
    return patterns


SessionPatterns = Annotated[list[str], AfterValidator(_session_patterns)]


class TokenSettings(SettingsGroup):
    """One static bearer token (``[[auth.tokens]]``); ``mcp-memory token new`` prints an entry."""

    name: str = Field(min_length=1, description="A label for logs and doctor; never a credential.")
    token_sha256: str | None = Field(
        None, pattern="^[0-9a-fA-F]{64}$", description="Hex SHA-256 of the token; the token itself is not stored."
    )
    token: str | None = Field(None, min_length=16, description="The token in plain text (doctor warns; prefer the hash).")
    sessions: SessionPatterns = Field(
        min_length=1, description="Sessions it may use: exact names, prefixes ending in '*', or '*' for all."
    )
    can_delete: bool = Field(False, description="May call delete_memory.")
    rate_limit_per_minute: int | None = Field(None, ge=1, description="Tool calls per minute; unset: no limit.")

    @model_validator(mode="after")
    def _one_secret(self) -> TokenSettings:
        if (self.token is None) == (self.token_sha256 is None):
            raise ValueError(f"token {self.name!r}: give exactly one of token_sha256 and token")
        return self


class OAuthSettings(SettingsGroup):
    """OAuth 2.1 resource server (``[auth.oauth]``): access tokens issued by your authorization server."""

    issuer: str = Field(min_length=1, description="The authorization server; tokens' iss must equal it.")
    audience: str = Field(min_length=1, description="Tokens' aud must contain it (often resource_url).")
    resource_url: str = Field(
        min_length=1, description="This server's public MCP URL (https://memory.example.com/mcp); RFC 9728 resource."
    )
    jwks_url: str | None = Field(None, description="JWT access tokens: the issuer's JSON Web Key Set.")
    introspection_url: str | None = Field(None, description="Opaque tokens: the RFC 7662 introspection endpoint.")
    client_id: str | None = Field(None, description="Introspection: this server's client id (HTTP Basic).")
    client_secret: str | None = Field(None, description="Introspection: this server's client secret.")
    algorithms: list[str] = Field(["RS256", "ES256", "PS256", "EdDSA"], min_length=1,
                                  description="JWT signature algorithms accepted (never none or HMAC).")
    required_scopes: list[str] = Field([], description="Scopes every token must carry.")
    sessions: list[str] = Field(
        ["user:{sub}:*"], min_length=1,
        description="Session patterns a token may use; {claim} is replaced by that claim's value, literally.",
    )
    can_delete: bool = Field(False, description="Tokens may call delete_memory (in their own sessions).")
    delete_scope: str | None = Field(None, description="When set, delete_memory also needs this scope.")
    rate_limit_per_minute: int | None = Field(None, ge=1, description="Tool calls per minute per subject.")
    jwks_cache_s: float = Field(
        300.0, gt=0, description="How long a fetched JWKS is reused (at least 30 s); a failed refresh keeps the keys."
    )
    timeout_s: float = Field(10.0, gt=0, description="JWKS and introspection requests.")
    leeway_s: float = Field(30.0, ge=0, description="Clock skew allowed on exp and nbf.")

    @model_validator(mode="after")
    def _one_method(self) -> OAuthSettings:
        if (self.jwks_url is None) == (self.introspection_url is None):
            raise ValueError("auth.oauth: give exactly one of jwks_url and introspection_url")
        if self.introspection_url and not (self.client_id and self.client_secret):
            raise ValueError("auth.oauth: introspection_url needs client_id and client_secret")
        if any(a.upper().startswith("HS") or a.lower() == "none" for a in self.algorithms):
            raise ValueError("auth.oauth.algorithms: only asymmetric algorithms (RS*, PS*, ES*, EdDSA)")
        for template in self.sessions:
            if re.search(r"\}\*", template):
                raise ValueError(f"auth.oauth.sessions {template!r}: put a separator between a claim and '*' ({{sub}}:*)")
            _session_patterns([re.sub(r"\{[^}]*\}", "x", template)])
        return self


class AuthSettings(SettingsGroup):
    """Who may call over HTTP: static bearer tokens, an OAuth issuer, or both. Empty: nobody is asked."""

    tokens: list[TokenSettings] = []
    oauth: OAuthSettings | None = None

    @property
    def enabled(self) -> bool:
        """True when HTTP callers must present a token."""
        return bool(self.tokens) or self.oauth is not None

    @model_validator(mode="after")
    def _unique_names(self) -> AuthSettings:
        names = [token.name for token in self.tokens]
        if len(set(names)) != len(names):
            raise ValueError("auth.tokens: every token needs a name of its own")
        # one secret in two entries would silently get the later entry's sessions and can_delete
        digests = [(t.token_sha256 or hashlib.sha256((t.token or "").encode()).hexdigest()).lower() for t in self.tokens]
        if len(set(digests)) != len(digests):
            raise ValueError("auth.tokens: two entries hold the same token; give each its own (mcp-memory token new)")
        return self


class HttpSettings(SettingsGroup):
    """The streamable HTTP server (``serve --transport http``): Host and Origin checks (DNS rebinding
    protection, on for every bind address) and bounds on MCP sessions."""

    allowed_hosts: list[str] | None = Field(
        None, description="Host header values accepted besides the defaults (loopback names, the bind address or, "
        "on 0.0.0.0, this machine's names and addresses); 'name:*' for any port."
    )
    allowed_origins: list[str] | None = Field(
        None, description="Origin header values accepted besides the http(s) origins of the accepted Host names."
    )

    session_idle_timeout_s: float = Field(
        600.0, gt=0, description="An MCP session with no request in flight for this long is closed (404 after), in seconds."
    )
    max_sessions: int = Field(1_000, ge=1, description="Open MCP sessions in total; past it a new session gets 503.")
    max_sessions_per_client: int = Field(
        32, ge=1, description="Open MCP sessions per client (bearer token, else address); one more closes its "
        "least recently used session.",
    )


class StdioSettings(SettingsGroup):
    """The stdio server: no token (the client owns the process), but its sessions can be limited."""

    sessions: SessionPatterns = Field(["*"], min_length=1, description="Sessions a stdio client may use.")


class MetricsSettings(SettingsGroup):
    """``[metrics]``: who may read ``/metrics`` on the HTTP transport."""

    public: bool = Field(
        False, description="Serve /metrics without a token even when [auth] is configured (metrics hold no session "
        "names, memory ids or text). Host checks still apply."
    )
