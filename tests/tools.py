"""Calling the MCP tools in tests: results that must succeed, as structured content."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool`` and return its structured result; fail the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def store(client: Client, session: str, content: str, **extra: Any) -> str:
    """Store one memory and return its memory_id."""
    return (await call(client, "store_memory", {"session": session, "content": content, **extra}))["memory_id"]
