"""``python -m mcp_memory`` runs the command line."""

import sys

from mcp_memory.cli import main

sys.exit(main())
