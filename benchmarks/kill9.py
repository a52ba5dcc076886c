"""kill -9 under writes, the long run: ``python -m benchmarks.kill9 --kills 25``.

The harness is tests/kill9.py (the suite runs it with 3 kills): writers store over HTTP with
idempotency keys and retry until acknowledged, the server is SIGKILLed at random moments and
restarted on the same data directory, and afterwards every acknowledged memory_id is checked over
MCP and in the database. Prints the report as JSON; exit status 1 when anything was lost, stored
twice, failed to restart or left PostgreSQL running.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kill9 import Kill9Run  # noqa: E402
from processes import free_port, stop_leftover_postgres  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-gap-s", type=float, default=3.0, help="longest wait after an acknowledgement before a kill")
    parser.add_argument("--target", choices=["server", "postgres"], default="server",
                        help="what is SIGKILLed: the mcp-memory server, or the embedded PostgreSQL's postmaster")
    parser.add_argument("--keep", action="store_true", help="keep the data directory and server logs")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-kill9-"))
    root.chmod(0o755)
    data_dir = root / "data"
    try:
        report = Kill9Run(data_dir, free_port(), root, kills=args.kills, writers=args.writers,
                          sessions=args.sessions, seed=args.seed, max_gap_s=args.max_gap_s,
                          target=args.target).run()
    finally:
        stop_leftover_postgres(data_dir)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    figures = report.as_dict()
    print(json.dumps(figures, indent=2))
    bad = (report.lost or report.duplicates or report.restart_failures or report.orphaned_postgres or report.errors
           or report.postmasters_seen != (1 if args.target == "server" else 1 + report.kills))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
