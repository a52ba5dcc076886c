"""The command line: ``mcp-memory serve`` (stdio or streamable HTTP), ``doctor``, ``token new``, ``usage``,
``export``, ``import``, ``redact`` and ``model prepare``."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from mcp_memory import __version__
from mcp_memory.deps import Deps
from mcp_memory.errors import ConfigError, McpMemoryError
from mcp_memory.http.app import serve_http
from mcp_memory.http.token_command import add_token_command, run_token_command
from mcp_memory.observe.logs import configure_logging
from mcp_memory.privacy.sweep import add_redact_command
from mcp_memory.settings import Settings
from mcp_memory.stdio import serve_stdio
from mcp_memory.transfer.run import add_transfer_commands

__all__ = ["main"]

logger = logging.getLogger("mcp_memory")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, default=argparse.SUPPRESS,
                        help="config.toml to read (default: $MCP_MEMORY_CONFIG); before or after the command")
    common.add_argument("--log-level", type=str.upper, choices=["DEBUG", "INFO", "WARNING", "ERROR"], default=argparse.SUPPRESS,
                        help="log level; logs go to stderr (default: INFO, or MCP_MEMORY_LOG_LEVEL)")
    common.add_argument("--log-format", choices=["text", "json"], default=argparse.SUPPRESS,
                        help="log lines on stderr: text, or json (one object per line, for log shippers; default: "
                        "text, or MCP_MEMORY_LOG_FORMAT)")
    parser = argparse.ArgumentParser(
        prog="mcp-memory",
        parents=[common],
        description="Long-term memory for LLM agents over MCP, on PostgreSQL + pgvector. With no database URL an "
        "embedded PostgreSQL starts in the data directory. Settings: MCP_MEMORY_* environment variables over "
        "config.toml over defaults (see config.toml.example).",
    )
    parser.add_argument("--version", action="version", version=f"mcp-memory {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    # allow_abbrev=False: no prefix completes to --insecure-no-auth (``serve --insecure`` served without auth)
    serve = commands.add_parser("serve", parents=[common], allow_abbrev=False,
                                help="run the MCP server (stdio by default)",
                                description="Run the MCP server: stdio for desktop clients (default), or "
                                "streamable HTTP at /mcp with a health endpoint at /health.")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                       help="stdio for desktop clients; http for streamable HTTP at /mcp (health at /health)")
    serve.add_argument("--host", default=None, help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="HTTP port (default 8020)")
    serve.add_argument("--stateless", action="store_true",
                       help="HTTP without MCP sessions: every request stands alone (for load balancers)")
    serve.add_argument("--insecure-no-auth", action="store_true",
                       help="HTTP: serve a non-loopback --host without any token (logs a WARNING); never on a network "
                       "you do not trust")
    body = serve.add_mutually_exclusive_group()
    body.add_argument("--sse", action="store_true",
                      help="HTTP: answer each request with an SSE stream instead of one JSON body")
    body.add_argument("--json-response", action="store_true",
                      help="HTTP: one JSON body per request (the default; kept for older command lines)")
    add_token_command(commands)
    doctor = commands.add_parser("doctor", parents=[common], allow_abbrev=False,
                                 help="start the database and the model once, print "
                                 "what was found, check it, and exit (1 when a check fails)",
                                 description="Start the database (embedded or external) and load the embedding model "
                                 "once, print the data directory, database, model, LLM and auth, then the checks "
                                 "(postgresql, pgvector, extensions, migrations, indexes, vector_cache, secrets, auth, llm), "
                                 "each ok, warn or fail; exit 1 when one fails. See docs/operations.md, Health checks.")
    doctor.add_argument("--host", default="127.0.0.1",
                        help="the address serve --transport http will bind, for the auth check (default 127.0.0.1)")
    doctor.add_argument("--insecure-no-auth", action="store_true",
                        help="serve will run with --insecure-no-auth: a public --host without auth warns, not fails")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON on stdout, for scripts")
    model = commands.add_parser("model", help="the embedding model's files in <data_dir>/models")
    model.add_subparsers(dest="model_command", required=True).add_parser(
        "prepare", parents=[common], help="build them now, as the first start of serve would (the Dockerfile bakes "
        "the int8 model so); a server on that data dir then writes nothing there", description="Build the embedding "
        "model's files in <data_dir>/models as the first start of serve would (the default model: rewritten to "
        "multiply in int8; another fastembed model: downloaded), load it once, print one line and exit.")
    usage = commands.add_parser("usage", parents=[common], help="print LLM token totals (JSON); --reset clears them",
                                description="Print the LLM token totals per operation as JSON. With --reset, clear "
                                "them and print what was cleared; the reset is recorded in an internal table "
                                "(usage_resets), never in a client's session. Clients can read usage but not clear it.")
    usage.add_argument("--reset", action="store_true", help="clear the totals after printing them")
    usage.add_argument("--sessions", nargs="+", default=["*"], metavar="PATTERN",
                       help="only these sessions: exact names or prefixes ending in * (default: * = all)")
    add_transfer_commands(commands, common)
    add_redact_command(commands, common)
    return parser


def _configure_logging(settings: Settings) -> None:
    # stdout belongs to the stdio protocol: every log line goes to stderr (observe/logs.py).
    configure_logging(settings.log_level, settings.log_format)


# uvloop (libuv) for the HTTP server's event loop, and uvicorn picks httptools over h11 by itself:
# recall p50 1.07x at 10k memories, same run (benchmarks/RESULTS.md). Not on Windows.
_HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def _usage(settings: Settings, patterns: list[str], reset: bool) -> None:
    from mcp_memory.access.scope import SessionScope
    from mcp_memory.pipeline.usage import reset_usage, usage_stats

    try:
        scope = SessionScope.parse(patterns)
    except ValueError as exc:
        raise ConfigError(f"--sessions: {exc}") from None
    deps = Deps(settings)
    await deps.start()
    try:
        ready = await deps.ready()
        if reset:
            cleared = await reset_usage(ready.repository, scope)
            print(json.dumps({"cleared": cleared.model_dump()["operations"], "sessions": scope.patterns()}, indent=2))
        else:
            print((await usage_stats(ready.repository, scope)).model_dump_json(indent=2))
    finally:
        await deps.close()


def _exit_on_signals() -> None:
    """SIGTERM raises SystemExit and SIGINT KeyboardInterrupt in the main thread, wherever it is.

    With Python's own SIGINT handler in place, asyncio's runner would instead cancel the main task once
    and wait for it; a stdio server so stopped now and then kept running with its client's stdin open
    (test_lifecycle's SIGINT case, about one CI run in ten), while the SIGTERM path never did. Both now
    take the SIGTERM path; the event loop's shutdown then cancels every task and the lifespan closes.
    """
    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, interrupt)  # not default_int_handler, so asyncio keeps its hands off


_SECRET_KEYS = frozenset({"token", "client_secret", "api_key", "rerank_api_key", "database_url"})


def _hidden(value: object) -> object:
    """``value`` with the values of secret keys (``_SECRET_KEYS``), at any depth, replaced by ``'<hidden>'``."""
    if isinstance(value, dict):
        return {k: "<hidden>" if k in _SECRET_KEYS else _hidden(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_hidden(v) for v in value]
    return value


def _shown(error: Any) -> object:
    """What a settings error may echo of its input: never a secret (a plain token, a client secret, an
    API key, a database URL with its password), since start-up errors end up in logs."""
    if any(part in _SECRET_KEYS for part in error["loc"]):
        return "<hidden>"
    return _hidden(error.get("input"))


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)  # auth.tokens.0.name: pydantic's path, as the README quotes it


def _problem(error: Any) -> str:
    """One bad key of the settings as operators name it: ``unknown section [recal] (did you mean
    [recall]?)`` or ``unknown setting recall.topk (...)`` for a key no model has (pydantic says
    "Extra inputs are not permitted"), else the key, pydantic's message and the input."""
    loc = error["loc"]
    if error["type"] != "extra_forbidden":
        return f"{_dotted(loc)}: {error['msg']} (got {_shown(error)!r})"
    known = Settings.keys_at(loc[:-1])
    near = [_dotted((*loc[:-1], name)) for name in difflib.get_close_matches(str(loc[-1]), known, n=1)]
    if isinstance(error.get("input"), dict):
        return f"unknown section [{_dotted(loc)}]" + "".join(f" (did you mean [{name}]?)" for name in near)
    hint = f"did you mean {near[0]}?" if near else f"{_dotted(loc[:-1]) or 'the top level'}'s settings: {', '.join(known)}"
    return f"unknown setting {_dotted(loc)} ({hint})"


def _load_settings(config: Path | None) -> Settings:
    """Settings.load, with pydantic's and TOML's errors turned into one line per bad key."""
    import tomllib

    try:
        return Settings.load(config)
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {'; '.join(_problem(error) for error in exc.errors())}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file is not valid TOML: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 on a start-up error)."""
    args = _parser().parse_args(argv)
    if args.command == "token":
        return run_token_command(args)
    try:
        settings = _load_settings(getattr(args, "config", None))
        if getattr(args, "log_level", None):
            settings = settings.model_copy(update={"log_level": args.log_level})
        if getattr(args, "log_format", None):
            settings = settings.model_copy(update={"log_format": args.log_format})
        _configure_logging(settings)
        _exit_on_signals()
        if args.command == "doctor":
            from mcp_memory.doctor import doctor

            return anyio.run(doctor, settings, args.host, args.json, args.insecure_no_auth)
        elif args.command == "export":
            from mcp_memory.transfer.run import run_export

            anyio.run(run_export, settings, args.session, args.sessions_like, args.all, args.output)
        elif args.command == "import":
            from mcp_memory.transfer.run import run_import

            anyio.run(run_import, settings, args.path, args.session, args.session_prefix, args.dry_run, args.format)
        elif args.command == "redact":
            from mcp_memory.privacy.sweep import run_redact

            anyio.run(run_redact, settings, args.session, args.sessions_like, args.all, args.dry_run)
        elif args.command == "model":
            from mcp_memory.embedding.prepare import prepare_model

            prepared = prepare_model(settings)
            print(prepared.describe() if prepared else "embedding.provider is openai: no local model to prepare")
        elif args.command == "usage":
            anyio.run(_usage, settings, args.sessions, args.reset)
        elif args.transport == "http":
            anyio.run(
                serve_http, settings, args.host or "127.0.0.1", args.port or 8020, args.stateless, not args.sse,
                args.insecure_no_auth,
                backend_options={"use_uvloop": _HAVE_UVLOOP},
            )
        else:
            http_only = [flag for flag, given in (("--host", args.host is not None), ("--port", args.port is not None),
                         ("--stateless", args.stateless), ("--insecure-no-auth", args.insecure_no_auth),
                         ("--sse", args.sse), ("--json-response", args.json_response))
                         if given]
            if http_only:  # stdio would ignore them, and a client would wait on a port nobody opened
                raise ConfigError(f"{', '.join(http_only)} only apply to --transport http")
            anyio.run(serve_stdio, settings)
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
