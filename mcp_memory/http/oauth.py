"""OAuth 2.1 resource server: verify access tokens from ``[auth.oauth]``'s issuer.

JWT access tokens are verified with PyJWT against the issuer's JWKS (fetched with httpx,
cached ``jwks_cache_s``, fetched again once when a token names an unknown key id, at most every
30 s; a refresh that fails keeps the keys fetched before, so an issuer briefly down locks nobody out): signature
(asymmetric algorithms only), ``iss``, ``aud``, ``exp`` (required) and ``nbf`` with
``leeway_s`` of clock skew. Opaque tokens go to the RFC 7662 introspection endpoint instead.

The sessions a token may use come from the ``sessions`` templates: ``user:{sub}:*`` becomes
``user:<sub>:*``. A claim value is inserted literally and must not widen the scope, so a value
that is empty, not a string, or holds ``*``, the character that follows the placeholder in the
template (``:`` above), or a control character refuses the token (HTTP 401): a ``sub`` of
``*`` or ``alice:x`` would otherwise reach every user's, or alice's, sessions.

Failure policy: any failure (bad signature, wrong issuer, JWKS unreachable, ...) refuses the
token, logged at WARNING without the token.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import jwt

from mcp_memory.access.scope import SessionScope
from mcp_memory.access.gate import Caller, CallerToken
from mcp_memory.settings import OAuthSettings

__all__ = ["OAuthVerifier", "scope_from_claims"]

logger = logging.getLogger(__name__)

_REFETCH_S = 30.0  # the least time between two JWKS fetches once keys are known
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.:-]+)\}")


def scope_from_claims(templates: list[str], claims: dict[str, Any]) -> SessionScope:
    """The session patterns of ``templates`` with each ``{claim}`` replaced by that claim's value.

    Raises:
        ValueError: a claim is missing, not a non-empty string, or holds a character that
            would widen the pattern (see the module docstring).
    """
    patterns = []
    for template in templates:
        def insert(match: re.Match[str], template: str = template) -> str:
            value = claims.get(match.group(1))
            if not isinstance(value, str) or not value:
                raise ValueError(f"claim {match.group(1)!r} is missing or not a non-empty string")
            following = template[match.end():match.end() + 1]
            forbidden = {"*", following} - {""}
            if any(ch in value for ch in forbidden) or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
                raise ValueError(f"claim {match.group(1)!r} holds a character that would widen the session pattern")
            return value

        patterns.append(_PLACEHOLDER.sub(insert, template))
    return SessionScope.parse(patterns)


class OAuthVerifier:
    """Verifies one issuer's access tokens and maps them to Callers."""

    def __init__(self, settings: OAuthSettings, transport: httpx.AsyncBaseTransport | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._transport = transport
        self._clock = clock  # monotonic seconds, for the JWKS cache (a seam for tests)
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = -float("inf")  # monotonic time of the last JWKS fetched
        self._tried_at = -float("inf")  # ... and of the last attempt, answered or not
        self._fetching = anyio.Lock()

    async def verify(self, token: str) -> CallerToken | None:
        """The verified token with its Caller, or None when it is not valid here."""
        try:
            if self.settings.jwks_url:
                claims = await self._decode(token)
            else:
                claims = await self._introspect(token)
            return self._caller_token(token, claims)
        except Exception as exc:  # every failure refuses the token; the reason goes to the log
            logger.warning("OAuth token refused: %s", str(exc)[:200])
            return None

    def _caller_token(self, token: str, claims: dict[str, Any]) -> CallerToken:
        s = self.settings
        scopes = _scopes(claims)
        scope = scope_from_claims(s.sessions, claims)
        subject = claims.get("sub")
        caller = Caller(
            name=f"oauth:{claims.get('iss')}#{subject}",
            scope=scope,
            can_delete=s.can_delete and (s.delete_scope is None or s.delete_scope in scopes),
            rate_limit_per_minute=s.rate_limit_per_minute,
        )
        exp = claims.get("exp")
        return CallerToken(
            token=token, client_id=str(claims.get("client_id") or claims.get("azp") or subject), scopes=scopes,
            expires_at=int(exp) if isinstance(exp, int | float) else None,
            subject=str(subject) if subject is not None else None,
            claims={"iss": claims.get("iss")}, caller=caller,
        )

    async def _decode(self, token: str) -> dict[str, Any]:
        s = self.settings
        kid = jwt.get_unverified_header(token).get("kid")
        key = await self._key(kid)
        return jwt.decode(
            token, key=key, algorithms=s.algorithms, audience=s.audience, issuer=s.issuer, leeway=s.leeway_s,
            options={"require": ["exp", "iss", "aud"]},
        )

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        if self._due(kid):
            async with self._fetching:  # one fetch at a time; the others then find what it found
                if self._due(kid):
                    await self._refresh()
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        if kid not in self._keys:
            raise ValueError(f"no key {kid!r} in the issuer's JWKS")
        return self._keys[kid]

    def _due(self, kid: str | None) -> bool:
        """Fetch the JWKS now? Always while no key is known; otherwise when the keys are older than
        ``jwks_cache_s`` or ``kid`` is unknown (the issuer may have rotated), at most every 30 s."""
        if not self._keys:
            return True
        now = self._clock()
        if now - self._tried_at <= _REFETCH_S:
            return False
        return now - self._fetched_at > self.settings.jwks_cache_s or kid not in self._keys

    async def _refresh(self) -> None:
        """Fetch the JWKS; when that fails and keys were fetched before, keep them and ask again in 30 s.

        An issuer that is briefly unreachable then refuses no token it signed with a known key (the
        keys were refused wholesale once the cache aged, each request waiting ``timeout_s`` for the fetch).

        Raises:
            Exception: the fetch failed and no keys were ever fetched.
        """
        self._tried_at = self._clock()
        try:
            await self._fetch_jwks()
        except Exception as exc:
            if not self._keys:
                raise
            logger.warning("JWKS refresh failed (%s); using the %d keys fetched before, asking again in %.0f s",
                           str(exc)[:200], len(self._keys), _REFETCH_S)

    async def _fetch_jwks(self) -> None:
        assert self.settings.jwks_url is not None
        async with httpx.AsyncClient(timeout=self.settings.timeout_s, transport=self._transport) as client:
            response = await client.get(self.settings.jwks_url)
            response.raise_for_status()
            keys = jwt.PyJWKSet.from_dict(response.json()).keys
        self._keys = {key.key_id: key for key in keys if key.key_id is not None}
        if len(keys) == 1 and keys[0].key_id is None:
            self._keys = {None: keys[0]}  # type: ignore[dict-item]
        self._fetched_at = self._clock()

    async def _introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662: ask the issuer; the same iss, aud, exp and nbf checks apply to its answer."""
        s = self.settings
        assert s.introspection_url is not None and s.client_id and s.client_secret
        async with httpx.AsyncClient(timeout=s.timeout_s, transport=self._transport) as client:
            response = await client.post(s.introspection_url, data={"token": token, "token_type_hint": "access_token"},
                                         auth=(s.client_id, s.client_secret))
            response.raise_for_status()
            claims = response.json()
        if not isinstance(claims, dict) or claims.get("active") is not True:
            raise ValueError("introspection: token is not active")
        now = time.time()
        if claims.get("iss", s.issuer) != s.issuer:
            raise ValueError("introspection: wrong issuer")
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences or []
        if s.audience not in audiences:
            raise ValueError("introspection: token is not for this audience")
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] < now - s.leeway_s:
            raise ValueError("introspection: token has expired or has no exp")
        if isinstance(claims.get("nbf"), int | float) and claims["nbf"] > now + s.leeway_s:
            raise ValueError("introspection: token is not valid yet")
        claims.setdefault("iss", s.issuer)
        return claims


def _scopes(claims: dict[str, Any]) -> list[str]:
    """``scope`` (RFC 8693/9068: space-separated) or ``scp`` (a list, as Okta and Entra send)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [str(item) for item in scp]
    if isinstance(scp, str):
        return scp.split()
    return []
