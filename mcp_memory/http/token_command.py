"""``mcp-memory token new``: a fresh bearer token for an HTTP client, and the entry that grants it.

The token is printed once and never stored; the entry to paste (``[[auth.tokens]]`` in
config.toml, or an ``MCP_MEMORY_AUTH__TOKENS`` line for an env file) holds only its SHA-256
(``http/auth.py``). It needs no settings and no database.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mcp_memory.http.auth import new_token, token_entry, token_env_line

__all__ = ["add_token_command", "run_token_command"]


def add_token_command(commands: Any) -> None:
    """The ``token`` command group's arguments, on the CLI's subparsers ``commands``."""
    token = commands.add_parser("token", help="bearer tokens for HTTP clients",
                                description="Bearer tokens for the HTTP transport ([[auth.tokens]] in config.toml).")
    token_commands = token.add_subparsers(dest="token_command", required=True)
    new = token_commands.add_parser(
        "new", help="print a fresh random token once, and the [[auth.tokens]] entry (its SHA-256) to paste",
        description="Print a fresh random token (shown once: give it to the client) and the [[auth.tokens]] entry "
        "to paste into config.toml, which holds only the token's SHA-256.")
    new.add_argument("--name", required=True, help="a label for logs and doctor (not a secret)")
    new.add_argument("--sessions", action="append", required=True, metavar="PATTERN",
                     help="sessions it may use: an exact name, a prefix ending in '*' (team:alpha:*), or '*' for all; "
                     "repeat for several")
    new.add_argument("--can-delete", action="store_true", help="may call delete_memory")
    new.add_argument("--rate-limit-per-minute", type=int, default=None, metavar="N", help="tool calls per minute")
    new.add_argument("--env", action="store_true", help="print the entry as an env file line "
                     "(MCP_MEMORY_AUTH__TOKENS='[...]', for the .env of docker-compose.yml) instead of TOML")


def run_token_command(args: argparse.Namespace) -> int:
    """``mcp-memory token new``: the token alone on stdout (one line, for scripts), then on stderr what
    to do with it and the entry to paste (which holds only its SHA-256)."""
    from mcp_memory.access.scope import SessionScope

    try:
        SessionScope.parse(args.sessions)
    except ValueError as exc:
        print(f"mcp-memory: --sessions: {exc}", file=sys.stderr)
        return 2
    if not args.name.strip() or (args.rate_limit_per_minute is not None and args.rate_limit_per_minute < 1):
        print("mcp-memory: --name must not be blank and --rate-limit-per-minute must be at least 1", file=sys.stderr)
        return 2
    token = new_token()
    print(token, flush=True)  # alone on stdout, so TOKEN=$(mcp-memory token new ...) captures it
    say = sys.stderr.write
    say(f"The token for {args.name!r} is the line printed on standard output, shown only now; give it to the client "
        "as the header 'Authorization: Bearer <token>'.\n\n")
    if args.env:
        say("Put this line into .env in place of any MCP_MEMORY_AUTH__TOKENS line (it holds only the token's "
            "SHA-256; one line holds every token, so merge the lists to keep several) and restart the server "
            "(docker compose up -d):\n\n")
        say(token_env_line(token, args.name, args.sessions, args.can_delete, args.rate_limit_per_minute) + "\n")
        return 0
    say("Paste this into config.toml (it holds only the token's SHA-256) and restart the server with "
        "--config config.toml (or MCP_MEMORY_CONFIG=config.toml); a server on 0.0.0.0 also accepts the names in "
        "[http] allowed_hosts:\n\n")
    say(token_entry(token, args.name, args.sessions, args.can_delete, args.rate_limit_per_minute) + "\n")
    return 0
