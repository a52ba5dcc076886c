"""Peak RSS of ``mcp-memory import --dry-run`` for each format, at several sizes.

Writes a file of N memories in each format (an ``mcp-memory`` export, an MCP knowledge graph, a mem0
``get_all`` file as one line, a Markdown file of N paragraphs), runs the installed ``mcp-memory import
FILE --dry-run`` on it against one embedded database, and samples the RSS of that process (not of
PostgreSQL) every 20 ms with psutil. A streaming importer's peak stays flat as N grows.

    python -m benchmarks.import_rss --entries 10000 300000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

FORMATS = ("mcp-memory", "mcp-kg", "mem0", "markdown")
MCP_MEMORY = str(Path(sys.executable).parent / "mcp-memory")


def write(fmt: str, n: int, folder: Path) -> Path:
    """A file of ``n`` memories in ``fmt``, each about 60 to 90 characters of text."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "mcp-memory":
        path = folder / "export.jsonl"
        with path.open("w") as out:
            out.write(json.dumps({"format": "mcp-memory", "version": 1}) + "\n")
            for i in range(n):
                out.write(json.dumps({"memory_id": str(uuid.UUID(int=i + 1)), "session": "bench",
                                      "content": f"Memory {i}: the kiln reached cone {i % 12} on a Tuesday",
                                      "occurred_at": "2024-01-01T00:00:00+00:00"}) + "\n")
    elif fmt == "mcp-kg":
        path = folder / "memory.jsonl"
        with path.open("w") as out:
            for i in range(n):
                out.write(json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": "thing",
                                      "observations": [f"Observation {i}: the kiln reached cone {i % 12}"]}) + "\n")
    elif fmt == "mem0":
        path = folder / "mem0.json"
        with path.open("w") as out:
            out.write('{"results": [')
            for i in range(n):
                out.write(("," if i else "") + json.dumps(
                    {"id": f"mem0-{i}", "memory": f"Memory {i}: likes the kiln at cone {i % 12}",
                     "created_at": "2024-01-01T00:00:00+00:00", "user_id": "bench"}))
            out.write('], "count": %d}' % n)
    else:
        path = folder / "notes.md"
        with path.open("w") as out:
            for i in range(n):
                out.write(f"Paragraph {i}: the kiln reached cone {i % 12} on a Tuesday.\n\n")
    return path


def peak_rss_mb(args: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, object]]:
    """(peak RSS in MB, seconds, the summary) of one ``mcp-memory`` run, sampled every 20 ms."""
    started = time.perf_counter()
    process = subprocess.Popen([MCP_MEMORY, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    watched = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    out = process.stdout.read() if process.stdout else b""
    if process.wait() != 0:
        raise SystemExit(f"mcp-memory {' '.join(args)} failed")
    return peak / 2**20, time.perf_counter() - started, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[10_000, 300_000])
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="import-rss-") as scratch:
        env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(Path(scratch) / "data"), "MCP_MEMORY_LOG_LEVEL": "WARNING"}
        print("| format | entries | file MB | peak RSS MB | seconds |")
        print("| --- | --- | --- | --- | --- |")
        for fmt in options.formats:
            for n in options.entries:
                path = write(fmt, n, Path(scratch) / f"{fmt}-{n}")
                rss, seconds, summary = peak_rss_mb(
                    ["import", str(path), "--format", fmt, "--session", "bench", "--dry-run"], env)
                assert summary["stored"] == n, summary
                print(f"| {fmt} | {n:,} | {path.stat().st_size / 2**20:.1f} | {rss:.0f} | {seconds:.1f} |", flush=True)
                path.unlink()


if __name__ == "__main__":
    main()
