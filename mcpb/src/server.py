# /// script
# requires-python = ">=3.11"
# dependencies = ["mcp-memory-pg==0.1.0"]
# ///
"""The bundle's entry point: ``mcp-memory serve`` over stdio, from the mcp-memory-pg package.

``uv run --script`` reads the dependency above and resolves it for this machine's Python only
(a project's ``uv run`` would resolve for every platform and Python version at once).
"""

import sys

from mcp_memory.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve"]))
