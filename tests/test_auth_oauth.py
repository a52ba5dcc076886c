"""OAuth 2.1 resource server over real HTTP: JWT access tokens from a test issuer, private namespaces.

The issuer (tests/issuer.py) makes its RSA key in the test and serves its JWKS on 127.0.0.1;
one ``mcp-memory serve --transport http`` process verifies its tokens, next to one static token.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import jwt
import pytest
from bearer import INITIALIZE, post, sha256, token_client, write_config
from issuer import ISSUER, Issuer, rsa_key
from processes import Spawner, create_database, drop_database, free_port

pytestmark = pytest.mark.anyio

STATIC = "static-" + "s" * 40


@dataclass
class Served:
    port: int
    issuer: Issuer
    resource: str

    def token(self, **claims: object) -> str:
        return self.issuer.token(self.resource, **claims)  # type: ignore[arg-type]

    def status(self, token: str) -> httpx.Response:
        return post(self.port, INITIALIZE, {"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="module")
async def served(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    logs = tmp_path_factory.mktemp("auth-oauth")
    db_url = await create_database(pg_url)
    issuer = Issuer()
    spawner = Spawner(logs)
    try:
        port = free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        config = write_config(
            logs / "config.toml",
            [{"name": "ops", "token_sha256": sha256(STATIC), "sessions": ["*"]}],
            {"auth.oauth": {"issuer": ISSUER, "audience": resource, "resource_url": resource,
                            "jwks_url": f"{issuer.url}/jwks.json", "required_scopes": ["memory"],
                            "sessions": ["user:{sub}:*"], "can_delete": True, "leeway_s": 0},
             "http": {"max_sessions_per_client": 3}},
        )
        server = spawner.http(spawner.data_dir(), port, "--config", str(config), MCP_MEMORY_DATABASE_URL=db_url)
        server.wait_healthy(port)
        yield Served(port, issuer, resource)
    finally:
        spawner.close()
        issuer.close()
        await drop_database(pg_url, db_url)


async def test_two_users_of_one_server_get_private_namespaces(served: Served) -> None:
    alice_session, bob_session = f"user:alice:{uuid.uuid4().hex[:6]}", f"user:bob:{uuid.uuid4().hex[:6]}"
    async with token_client(served.port, served.token(sub="alice")) as alice:
        stored = await alice.call_tool("store_memory", {"session": alice_session, "content": "alice's PIN is 4417"})
        assert not stored.is_error, stored.content
    async with token_client(served.port, served.token(sub="bob")) as bob:
        assert not (await bob.call_tool("store_memory", {"session": bob_session, "content": "bob likes tea"})).is_error
        for name, arguments in (("recall_memory", {"query": "PIN"}), ("list_audits", {}),
                                ("store_memory", {"content": "x"})):
            refused = await bob.call_tool(name, {"session": alice_session, **arguments})
            assert refused.is_error and "this token may not use this session" in refused.content[0].text
            assert "alice" not in refused.content[0].text
        recalled = await bob.call_tool("recall_memory", {"session": bob_session, "query": "PIN"})
        assert [m["content"] for m in recalled.structured_content["memories"]] == ["bob likes tea"]
    async with token_client(served.port, served.token(sub="alice")) as alice:
        recalled = await alice.call_tool("recall_memory", {"session": alice_session, "query": "PIN"})
        assert [m["content"] for m in recalled.structured_content["memories"]] == ["alice's PIN is 4417"]
        deleted = await alice.call_tool("delete_memory", {"session": alice_session, "all": True,
                                                          "confirm": alice_session})
        assert deleted.structured_content == {"deleted": True, "count": 1}


def _other_key_same_kid(served: Served) -> str:
    return served.issuer.token(served.resource, key=rsa_key())


def _hs256_with_public_key(served: Served) -> str:
    """The algorithm-confusion attack: HMAC keyed with the issuer's public key (built by hand; PyJWT refuses)."""
    import hashlib
    import hmac
    import json

    from cryptography.hazmat.primitives import serialization

    pem = served.issuer.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo)
    header = {"alg": "HS256", "typ": "JWT", "kid": served.issuer.kid}
    payload = {"iss": ISSUER, "aud": served.resource, "sub": "alice", "scope": "memory",
               "exp": int(time.time()) + 600}
    signing_input = b".".join(jwt.utils.base64url_encode(json.dumps(part).encode()) for part in (header, payload))
    signature = jwt.utils.base64url_encode(hmac.new(pem, signing_input, hashlib.sha256).digest())
    return (signing_input + b"." + signature).decode()


def _unsigned(served: Served) -> str:
    now = int(time.time())
    return jwt.encode({"iss": ISSUER, "aud": served.resource, "sub": "alice", "scope": "memory", "exp": now + 600},
                      None, algorithm="none", headers={"kid": served.issuer.kid})


BAD_TOKENS = {
    "wrong issuer": lambda s: s.token(iss="https://evil.example/realms/memory"),
    "wrong audience": lambda s: s.token(aud="https://other.example/mcp"),
    "expired": lambda s: s.token(exp=int(time.time()) - 5),
    "no exp": lambda s: s.token(exp=None),
    "not valid yet": lambda s: s.token(nbf=int(time.time()) + 600),
    "signed by another key": _other_key_same_kid,
    "hs256 with the public key": _hs256_with_public_key,
    "unsigned": _unsigned,
    "tampered payload": lambda s: (lambda t: t.split(".")[0] + "." + jwt.utils.base64url_encode(
        b'{"iss":"' + ISSUER.encode() + b'","aud":"' + s.resource.encode() + b'","sub":"*","scope":"memory",'
        b'"exp":9999999999}').decode() + "." + t.split(".")[2])(s.token()),
    "sub is a star": lambda s: s.token(sub="*"),
    "sub holds the separator": lambda s: s.token(sub="alice:x"),
    "sub ends with a star": lambda s: s.token(sub="ali*"),
    "no sub": lambda s: s.token(sub=None),
    "empty sub": lambda s: s.token(sub=""),
    "sub not a string": lambda s: s.token(sub=42),
    "not a jwt": lambda s: "opaque-token-the-issuer-never-made",
}


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
async def test_a_token_that_fails_verification_gets_401_and_runs_nothing(served: Served, case: str) -> None:
    response = served.status(BAD_TOKENS[case](served))
    assert response.status_code == 401, (case, response.text)
    assert "mcp-session-id" not in response.headers


async def test_a_good_token_without_the_required_scope_gets_403_insufficient_scope(served: Served) -> None:
    response = served.status(served.token(scope="profile email"))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
    assert served.status(served.token(scope="profile memory")).status_code == 200
    assert served.status(served.token(scope=None, scp=["memory"])).status_code == 200  # Okta/Entra style


async def test_the_401_challenge_points_to_rfc_9728_metadata_naming_the_issuer(served: Served) -> None:
    metadata_url = f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"
    challenge = post(served.port, INITIALIZE).headers["www-authenticate"]
    assert f'resource_metadata="{metadata_url}"' in challenge
    metadata = httpx.get(metadata_url, timeout=10).json()
    assert metadata["resource"] == served.resource
    assert metadata["authorization_servers"] == [ISSUER]
    assert metadata["scopes_supported"] == ["memory"]


async def test_a_static_token_still_works_next_to_oauth(served: Served) -> None:
    async with token_client(served.port, STATIC) as ops:
        stored = await ops.call_tool("store_memory", {"session": "ops:notes", "content": "rotate keys monthly"})
        assert not stored.is_error, stored.content


async def test_the_jwks_is_fetched_once_and_reused(served: Served) -> None:
    assert served.status(served.token(sub="carol")).status_code == 200
    before = served.issuer.requests.count("/jwks.json")
    assert before == 1  # every test here uses one key: one fetch in this server's life
    for sub in ("dave", "erin", "frank"):
        assert served.status(served.token(sub=sub)).status_code == 200
    assert served.issuer.requests.count("/jwks.json") == before


@pytest.mark.parametrize(("claims", "allowed", "refused"), [
    ({"sub": "alice"}, ["user:alice:", "user:alice:notes"], ["user:alice", "user:alicex:notes", "user:bob:x"]),
    ({"sub": "a%_\\'\""}, ["user:a%_\\'\":x"], ["user:a:x", "user:b:x"]),
])
def test_a_sessions_template_inserts_claims_literally(claims: dict, allowed: list[str], refused: list[str]) -> None:
    from mcp_memory.http.oauth import scope_from_claims

    scope = scope_from_claims(["user:{sub}:*"], claims)
    assert all(scope.allows(s) for s in allowed) and not any(scope.allows(s) for s in refused)


@pytest.mark.parametrize("sub", ["*", "a*", "alice:x", ":", "", "a\u0000b", "line\nbreak"])
def test_a_claim_that_would_widen_the_pattern_is_refused(sub: str) -> None:
    from mcp_memory.http.oauth import scope_from_claims

    with pytest.raises(ValueError, match="claim 'sub'"):
        scope_from_claims(["user:{sub}:*"], {"sub": sub})


@pytest.mark.parametrize("template", ["user:{sub}*", "a*{sub}:*", "{sub}**"])
def test_a_sessions_template_that_could_widen_is_a_config_error(template: str) -> None:
    from pydantic import ValidationError

    from mcp_memory.settings import OAuthSettings

    with pytest.raises(ValidationError):
        OAuthSettings(issuer=ISSUER, audience="a", resource_url="http://x/mcp", jwks_url="http://x/j",
                      sessions=[template])


async def test_introspection_verifies_opaque_tokens_with_the_same_checks() -> None:
    """RFC 7662: the issuer answers for opaque tokens; inactive, foreign, expired or unscoped answers refuse."""
    from mcp_memory.http.oauth import OAuthVerifier
    from mcp_memory.settings import OAuthSettings

    issuer = Issuer()
    try:
        now = int(time.time())
        good = {"active": True, "iss": ISSUER, "aud": "mem", "sub": "alice", "scope": "memory", "exp": now + 60}
        issuer.introspection = {
            "good": good,
            "inactive": {**good, "active": False},
            "foreign-issuer": {**good, "iss": "https://evil.example"},
            "foreign-audience": {**good, "aud": ["other"]},
            "expired": {**good, "exp": now - 5},
            "not-yet": {**good, "nbf": now + 600},
            "star-sub": {**good, "sub": "*"},
        }
        settings = OAuthSettings(issuer=ISSUER, audience="mem", resource_url="http://127.0.0.1/mcp",
                                 introspection_url=f"{issuer.url}/introspect", client_id="memory",
                                 client_secret="s3cret", leeway_s=0)
        verifier = OAuthVerifier(settings)
        verified = await verifier.verify("good")
        assert verified is not None and verified.scopes == ["memory"] and verified.subject == "alice"
        assert verified.caller.scope.patterns() == ["user:alice:*"] and verified.caller.can_delete is False
        for token in ("inactive", "foreign-issuer", "foreign-audience", "expired", "not-yet", "star-sub", "unknown"):
            assert await verifier.verify(token) is None, token
        wrong_secret = OAuthVerifier(settings.model_copy(update={"client_secret": "nope"}))
        assert await wrong_secret.verify("good") is None
    finally:
        issuer.close()


async def test_an_oauth_user_who_refreshes_tokens_is_one_client_to_the_session_bound(served: Served) -> None:
    """Each refresh gives a new access token; keyed by the token's text, every one had a bound of its own,
    so one user could fill the server's total and lock every other user out (503)."""
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    opened = []
    for i in range(5):
        token = served.token(sub="refresher", jti=f"refresh-{i}")
        reply = served.status(token)
        assert reply.status_code == 200, reply.text
        opened.append((token, reply.headers["mcp-session-id"]))
    other = served.token(sub="bystander")
    kept = served.status(other).headers["mcp-session-id"]
    answers = [post(served.port, ping, {"Authorization": f"Bearer {token}"}, sid).status_code for token, sid in opened]
    assert answers == [404, 404, 200, 200, 200], answers  # the newest 3 (http.max_sessions_per_client) stay
    assert post(served.port, ping, {"Authorization": f"Bearer {other}"}, kept).status_code == 200


async def test_an_issuer_briefly_down_refuses_no_token_signed_with_a_known_key() -> None:
    """Once the cached JWKS aged past jwks_cache_s, a failing fetch used to refuse every token (each after
    waiting for the fetch); the known keys now stay in use, and the issuer is asked again at most every 30 s."""
    from mcp_memory.http.oauth import OAuthVerifier
    from mcp_memory.settings import OAuthSettings

    issuer = Issuer()
    now = [1000.0]
    try:
        settings = OAuthSettings(issuer=ISSUER, audience="mem", resource_url="http://127.0.0.1/mcp",
                                 jwks_url=f"{issuer.url}/jwks.json", jwks_cache_s=60, timeout_s=5)
        verifier = OAuthVerifier(settings, clock=lambda: now[0])
        assert await verifier.verify(issuer.token("mem", sub="alice")) is not None
        issuer.jwks_status = 503
        now[0] += 61  # the cache has aged
        for sub in ("bob", "carol", "dave"):
            verified = await verifier.verify(issuer.token("mem", sub=sub))
            assert verified is not None and verified.caller.scope.patterns() == [f"user:{sub}:*"], sub
        assert issuer.requests.count("/jwks.json") == 2  # the first fetch and one failed refresh
        assert await verifier.verify(issuer.token("mem", key=rsa_key())) is None  # still checks the signature
        now[0] += 31
        issuer.jwks_status = 200
        assert await verifier.verify(issuer.token("mem", sub="erin")) is not None
        assert issuer.requests.count("/jwks.json") == 3
    finally:
        issuer.close()


async def test_the_page_api_takes_oauth_tokens_and_shows_only_the_users_own_sessions(served: Served) -> None:
    carol_session = f"user:carol:{uuid.uuid4().hex[:6]}"
    async with token_client(served.port, served.token(sub="carol")) as carol:
        assert not (await carol.call_tool("store_memory", {"session": carol_session, "content": "carol's bike"})).is_error

    def get(path: str, token: str, **params: str) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{served.port}{path}", params=params, timeout=30,
                         headers={"Authorization": f"Bearer {token}"})

    mine = get("/api/sessions", served.token(sub="carol"))
    assert mine.status_code == 200 and mine.json()["sessions"] == [{"session": carol_session, "memories": 1}]
    other = get("/api/memories", served.token(sub="dave"), session=carol_session)
    assert other.status_code == 403 and "bike" not in other.text
    assert get("/api/sessions", served.token(sub="dave")).json()["sessions"] == []
    unscoped = get("/api/sessions", served.token(sub="carol", scope="profile"))
    assert unscoped.status_code == 403 and 'error="insufficient_scope"' in unscoped.headers["www-authenticate"]
    expired = get("/api/sessions", served.token(sub="carol", exp=int(time.time()) - 60))
    assert expired.status_code == 401 and "resource_metadata=" in expired.headers["www-authenticate"]
