"""stdio has no token (the client owns the process), but ``[stdio] sessions`` limits what it reaches."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from processes import Spawner, fresh_db, raw_caller, spawn  # noqa: F401 - fresh_db and spawn are fixtures

pytestmark = pytest.mark.anyio


async def test_stdio_sessions_patterns_limit_a_stdio_client(fresh_db: str, spawn: Spawner) -> None:
    server = spawn.stdio(spawn.data_dir("data"), MCP_MEMORY_DATABASE_URL=fresh_db,
                         MCP_MEMORY_STDIO__SESSIONS='["me:*", "shared"]')
    server.initialize("2025-11-25")
    call = raw_caller(server)
    own = f"me:{uuid.uuid4().hex[:8]}"
    for session in (own, "shared"):
        stored = await call("store_memory", {"session": session, "content": "the boiler is serviced in October"})
        assert not stored.is_error, stored.text
    for session in ("you:x", "shared2", "me", "*"):
        for name, extra in (("store_memory", {"content": "x"}), ("recall_memory", {"query": "boiler"}),
                            ("list_audits", {}), ("delete_memory", {"all": True, "confirm": session})):
            refused = await call(name, {"session": session, **extra})
            assert refused.is_error, (name, refused.text)
            assert refused.text == (f"Error executing tool {name}: session: this session is outside [stdio] "
                                    "sessions in the server's config; nothing was read or changed; it may use "
                                    "sessions matching 'shared', 'me:*'"), refused.text
    server.close_stdin()
    assert server.wait() == 0
    connection = await asyncpg.connect(fresh_db)
    try:
        sessions = sorted(r["session"] for r in await connection.fetch("SELECT session FROM memories"))
    finally:
        await connection.close()
    assert sessions == sorted([own, "shared"])


async def test_stdio_reaches_every_session_by_default(fresh_db: str, spawn: Spawner) -> None:
    server = spawn.stdio(spawn.data_dir("data"), MCP_MEMORY_DATABASE_URL=fresh_db)
    server.initialize("2025-11-25")
    stored = await raw_caller(server)("store_memory", {"session": "*", "content": "a session named star"})
    assert not stored.is_error, stored.text
    server.close_stdin()
    assert server.wait() == 0
