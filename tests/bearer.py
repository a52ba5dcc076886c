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

from processes import START_TIMEOUT_S, Spawner, create_database, drop_database, free_port

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


@asynccontextmanager
async def configured_server(pg_url: str, logs: Path, tokens: list[dict[str, Any]] = (),
                            sections: dict[str, dict[str, Any]] | None = None, timeout_s: float = START_TIMEOUT_S,
                            **settings: str) -> AsyncIterator[tuple[int, str]]:
    """An HTTP server whose config file names ``tokens`` and ``sections`` (``write_config``), on a
    database of its own made on ``pg_url``, with ``settings`` as MCP_MEMORY_* variables: yields
    (port, database url); stops the server and drops the database after."""
    db_url = await create_database(pg_url)
    spawner = Spawner(logs)
    try:
        port = free_port()
        server = spawner.http(spawner.data_dir(), port, "--config", str(write_config(logs / "config.toml", tokens, sections)),
                              MCP_MEMORY_DATABASE_URL=db_url, **settings)
        server.wait_healthy(port, timeout_s=timeout_s)
        yield port, db_url
    finally:
        spawner.close()
        await drop_database(pg_url, db_url)
