"""What ``mcp-memory export`` and ``mcp-memory import`` run: start the database and the model
(embedded or external, as ``doctor`` does; no server needs to run), transfer, close."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from mcp_memory.access.scope import add_scope_arguments, command_scope
from mcp_memory.deps import Deps
from mcp_memory.errors import ConfigError, InvalidInput
from mcp_memory.pipeline.validate import check_session
from mcp_memory.settings import Settings
from mcp_memory.transfer.entries import resolve_format
from mcp_memory.transfer.export import export
from mcp_memory.transfer.importer import import_file

__all__ = ["add_transfer_commands", "run_export", "run_import"]

logger = logging.getLogger(__name__)


async def run_export(settings: Settings, session: str | None, sessions_like: str | None, everything: bool,
                     output: Path | None) -> None:
    """Export the chosen sessions to ``output`` (stdout when None).

    Raises:
        ConfigError: a bad session pattern, or ``output`` cannot be written.
    """
    scope = command_scope(session, sessions_like, everything)
    try:
        out = sys.stdout if output is None else output.open("w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror}") from None
    deps = Deps(settings)
    try:
        await deps.start()
        count = await export(await deps.ready(), scope, out)
        out.flush()
        logger.info("exported %d memories", count)
        if count == 0:  # a misspelt --session exports a header alone: say so where a person looks
            print(f"mcp-memory: no memories in {', '.join(scope.patterns())}; the export holds its header only",
                  file=sys.stderr)
    finally:
        await deps.close()
        if out is not sys.stdout:
            out.close()


async def run_import(settings: Settings, path: Path, session: str | None, prefix: str, dry_run: bool,
                     fmt: str = "auto") -> None:
    """Import the export (or the notes, ``fmt`` markdown) at ``path``; a one-line summary on stderr,
    the summary as JSON on stdout.

    Raises:
        ConfigError: a bad --session or --session-prefix, or the file is not an export.
    """
    try:
        if session is not None:
            check_session(prefix + session, settings.limits)
        elif prefix:
            check_session(prefix, settings.limits)
    except InvalidInput as exc:
        raise ConfigError(f"--session/--session-prefix: {exc}") from None
    fmt = resolve_format(path, fmt, session)  # a wrong file is refused before the database or model starts
    deps = Deps(settings)
    try:
        await deps.start()
        summary = await import_file(await deps.ready(), path, session, prefix, dry_run, fmt=fmt)
    finally:
        await deps.close()
    verb = "would store" if summary.dry_run else "stored"
    print(f"{verb} {summary.stored}, duplicates skipped {summary.duplicates}, rejected {len(summary.rejected)}, "
          f"supersessions restored {summary.supersessions}, secrets redacted in {summary.redacted}", file=sys.stderr)
    print(json.dumps(summary.as_json(), ensure_ascii=False, indent=2))

def add_transfer_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The ``export`` and ``import`` commands' arguments, on the CLI's subparsers ``commands``."""
    export = commands.add_parser("export", parents=[common], help="write memories as JSON Lines (a header line, "
                                 "then one memory a line)", description="Write memories as JSON Lines: a header "
                                 "line, then one memory a line in storage order, streamed from the database (the "
                                 "embedded one starts if no server runs). See docs/operations.md, Export and import.")
    add_scope_arguments(export)
    export.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: stdout)")
    load = commands.add_parser("import", parents=[common], help="read an mcp-memory export back in, or memories "
                               "from elsewhere (idempotent)",
                               description="Read a file written by mcp-memory export (or an MCP memory server's "
                               "memory.jsonl, mem0's get_all JSON, or Markdown/text notes): every line is checked like "
                               "store_memory, a bad line is reported with its number and skipped, memories keep "
                               "their ids and times, and memories already there are skipped as duplicates. "
                               "Progress on stderr; the summary as JSON on stdout.")
    load.add_argument("path", type=Path, help="the .jsonl export, memory.jsonl, mem0 .json, or a folder or file of "
                      "Markdown/text notes")
    load.add_argument("--format", choices=["auto", "mcp-memory", "mcp-kg", "markdown", "mem0"], default="auto",
                      help="mcp-memory (an export), mcp-kg (the MCP memory server's memory.jsonl; needs --session), "
                      "markdown (notes: one memory per paragraph; needs --session) or mem0 (get_all JSON; user_id is "
                      "the session unless --session); auto: detected from the name and first line (default)")
    load.add_argument("--session", default=None, help="store every memory into this session instead of its own")
    load.add_argument("--session-prefix", default="", metavar="P", help="put P before every target session name")
    load.add_argument("--dry-run", action="store_true", help="check every line and count; store nothing")
