"""Calling the MCP tools in tests: results that must succeed, as structured content."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client

from mcp_memory.access.gate import Gate
from mcp_memory.deps import Deps
from mcp_memory.server import build_server
from mcp_memory.settings import Settings


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool`` and return its structured result; fail the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def store(client: Client, session: str, content: str, **extra: Any) -> str:
    """Store one memory and return its memory_id."""
    return (await call(client, "store_memory", {"session": session, "content": content, **extra}))["memory_id"]


@asynccontextmanager
async def served(settings: Settings, gate: Gate | None = None) -> AsyncIterator[Client]:
    """A client of a server with resources of its own, built from ``settings`` and closed afterwards;
    ``gate`` decides who the caller is (None: stdio's rules)."""
    deps = Deps(settings)
    await deps.start()
    try:
        async with Client(build_server(settings, deps, gate=gate), mode="legacy") as client:
            yield client
    finally:
        await deps.close()
