"""Clients of an HTTP server that needs a bearer token, and config files naming tokens."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

CALL_TIMEOUT_S = 60.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def mcp_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def token_client(port: int, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    """An SDK client that sends ``Authorization: Bearer <token>`` with every request."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(CALL_TIMEOUT_S)) as http:
        async with Client(streamable_http_client(mcp_url(port), http_client=http), mode=mode,
                          read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client


def post(port: int, message: dict[str, Any], headers: dict[str, str] | None = None,
         session_id: str | None = None) -> httpx.Response:
    """One raw streamable-HTTP POST."""
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25", **(headers or {})}
    if session_id is not None:
        sent["Mcp-Session-Id"] = session_id
    return httpx.post(mcp_url(port), json=message, headers=sent, timeout=CALL_TIMEOUT_S)


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def write_config(path: Path, tokens: list[dict[str, Any]] = (), sections: dict[str, dict[str, Any]] | None = None) -> Path:
    """A config.toml with ``[[auth.tokens]]`` entries and other ``[section]`` tables."""
    lines: list[str] = []
    for name, table in (sections or {}).items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
    for entry in tokens:
        lines.append("[[auth.tokens]]")
        lines += [f"{key} = {toml_value(value)}" for key, value in entry.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
