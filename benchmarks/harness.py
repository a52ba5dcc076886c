"""A real ``mcp-memory serve --transport http`` process, a thin MCP client, and load runners.

The client speaks JSON-RPC over streamable HTTP with httpx directly (initialize once, then
``tools/call``), so the benchmark measures the server, not a heavy client. Peak RSS of the
server process is sampled every 20 ms with psutil.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil

__all__ = ["McpHttp", "SdkHttp", "ServerProcess", "percentiles", "run_load"]

VENV_BIN = Path(sys.executable).parent


class ServerProcess:
    """``mcp-memory serve --transport http`` on 127.0.0.1:port with its own data dir."""

    def __init__(self, data_dir: Path, port: int, env: dict[str, str] | None = None, args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.args = args or []
        self.port = port
        self.env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_LOG_LEVEL": "WARNING", **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.peak_rss = 0
        self._stop = threading.Event()

    def __enter__(self) -> ServerProcess:
        with socket.socket() as probe:  # a server already there would answer the health check for ours
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT is free
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError:
                raise RuntimeError(f"port {self.port} is in use; give the benchmark another --port") from None
        log = open(self.data_dir / f"server-{self.port}.log", "ab")
        self.process = subprocess.Popen(
            [str(VENV_BIN / "mcp-memory"), "serve", "--transport", "http", "--port", str(self.port), *self.args],
            env=self.env, stdout=log, stderr=log,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}; see {log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            raise RuntimeError("server did not become ready in 180 s")
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def _sample(self) -> None:
        assert self.process is not None
        proc = psutil.Process(self.process.pid)
        while not self._stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.02)

    def rss_mb(self) -> float:
        assert self.process is not None
        return psutil.Process(self.process.pid).memory_info().rss / 2**20

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server process has used so far."""
        assert self.process is not None
        times = psutil.Process(self.process.pid).cpu_times()
        return times.user + times.system

    def reset_peak(self) -> None:
        self.peak_rss = 0

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def _parse(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                payload = line[5:].strip()
                if payload:
                    message = json.loads(payload)
                    if "id" in message:
                        return message
        raise RuntimeError(f"no JSON-RPC reply in SSE body: {response.text[:300]}")
    return response.json()


class McpHttp:
    """Minimal MCP client over streamable HTTP: one MCP session, many concurrent tool calls."""

    def __init__(self, port: int, connections: int = 64) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self.http = httpx.AsyncClient(timeout=120, limits=limits)
        self.headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        self._id = 0

    async def __aenter__(self) -> McpHttp:
        reply = await self.http.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "0"}},
        })
        reply.raise_for_status()
        session = reply.headers.get("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        version = _parse(reply)["result"]["protocolVersion"]
        self.headers["mcp-protocol-version"] = version
        await self.http.post(self.url, headers=self.headers,
                             json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """(structured content, client-measured milliseconds); raises on is_error."""
        self._id += 1
        started = time.perf_counter()
        reply = await self.http.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": self._id, "method": "tools/call", "params": {"name": tool, "arguments": arguments},
        })
        message = _parse(reply)
        elapsed = (time.perf_counter() - started) * 1000
        result = message.get("result")
        if result is None or result.get("isError"):
            raise RuntimeError(f"{tool} failed: {json.dumps(message)[:500]}")
        return result.get("structuredContent") or {}, elapsed


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": round(statistics.median(ordered), 2), "p95": at(0.95), "p99": at(0.99), "n": len(ordered)}


async def run_load(
    work: Callable[[int], Awaitable[float]], concurrency: int, total: int
) -> tuple[list[float], float]:
    """Run ``work(i)`` for i in range(total) with ``concurrency`` workers; (latencies, wall seconds)."""
    latencies: list[float] = []
    counter = iter(range(total))

    async def worker() -> None:
        for i in counter:
            latencies.append(await work(i))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    return latencies, time.perf_counter() - started


class SdkHttp:
    """The MCP python SDK's own ``Client`` over streamable HTTP, with ``McpHttp``'s ``call``: what an
    agent built on the SDK pays per call (its JSON-RPC session, result models and output-schema check)."""

    def __init__(self, port: int) -> None:
        from mcp import Client

        self.client = Client(f"http://127.0.0.1:{port}/mcp")

    async def __aenter__(self) -> SdkHttp:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(*exc)

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """(structured content, client-measured milliseconds); raises on is_error."""
        started = time.perf_counter()
        result = await self.client.call_tool(tool, arguments)
        elapsed = (time.perf_counter() - started) * 1000
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        return result.structured_content or {}, elapsed
