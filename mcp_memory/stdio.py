"""Serve MCP over stdio (``mcp-memory serve``, the default transport): our stdin reader, and
every JSON-RPC request answered (jsonrpc.py)."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from mcp_memory.jsonrpc import answered_lines, forward_replies
from mcp_memory.server import build_server
from mcp_memory.settings import Settings

__all__ = ["serve_stdio"]


class _StdinLines:
    """The client's stdin as an async iterator of lines, read by a daemon thread.

    The SDK's own stdin reader is an anyio worker thread blocked in ``read()``: it cannot be
    cancelled, and interpreter exit waits for it, so a stdio server stopped by SIGTERM, SIGINT
    or a start-up SchemaError kept running until the client wrote or closed stdin
    (python-sdk #3551). This thread reads the raw descriptor (no buffered-reader lock to trip
    interpreter finalization) and dies with the process. Like the SDK, fd 0 is pointed at
    /dev/null while serving, so child processes never read the client's bytes.
    """

    def __init__(self) -> None:
        self._fd = os.dup(0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        send, receive = anyio.create_memory_object_stream[bytes](1)
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            pending = b""
            try:
                while chunk := os.read(self._fd, 65536):
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        anyio.from_thread.run(send.send, line + b"\n", token=token)
                if pending:
                    anyio.from_thread.run(send.send, pending, token=token)
            except Exception:  # the loop has ended or stopped listening: nothing is waiting for lines
                return
            finally:
                try:
                    anyio.from_thread.run_sync(send.close, token=token)
                except Exception:
                    pass

        threading.Thread(target=pump, name="mcp-memory stdin", daemon=True).start()
        async with receive:
            async for line in receive:
                yield line.decode("utf-8", errors="replace")


async def serve_stdio(settings: Settings) -> None:
    """Serve the MCP tools on this process's stdin and stdout until stdin closes."""
    server = build_server(settings)
    errors, replies = anyio.create_memory_object_stream[SessionMessage](16)  # jsonrpc.py: every request answered
    lines = answered_lines(_StdinLines(), errors)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with our stdin
        async with anyio.create_task_group() as group:
            group.start_soon(forward_replies, replies, write_stream)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
