"""What the MCP stack charges for a recall-sized result, apart from anything recall does.

Usage::

    python -m benchmarks.payload --port 18830 --requests 400 --json /tmp/payload.json

A bare ``MCPServer`` (no database, no model, none of our middleware) runs in a subprocess and serves
two tools that return our ``RecallResult`` model: ``empty`` (no memories) and ``recalled`` (``--memories``
memories, default 12 as recall's default top_k: LoCoMo turns with ids, times and scores as a recall
returns them). The MCP python SDK's ``Client`` calls them alternately over streamable HTTP, as
``benchmarks.floor`` calls the server. The difference of the p50s is what the protocol stack costs for
the result's size: the server's conversion of the model (text and structured content, its output-schema
check), the bytes on the wire, and the client's check of the structured content against the tool's
output schema. That last part is also timed alone, in this process, with the validator the SDK uses
(jsonschema, ``best_match`` over ``iter_errors``).

``benchmarks.floor`` defines the floor as a trivial call plus one query embedding; a recall also pays
this difference and its audit commit (``benchmarks.recall_stages``) before any search: benchmarks/RESULTS.md
adds them up.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx

from benchmarks.harness import percentiles
from benchmarks.load import DATA
from evals.locomo_data import load_locomo
from mcp_memory.models import RecalledMemory, RecallResult


def recalled(memories: int) -> RecallResult:
    """A recall's result holding the first ``memories`` turns of LoCoMo's first conversation."""
    turns = load_locomo(DATA / "locomo10.json")[0][0].turns[:memories]
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    return RecallResult(answer=None, memories=[
        RecalledMemory(memory_id=str(uuid.UUID(int=i + 1)), content=turn.content,
                       occurred_at=(start + timedelta(minutes=i)).isoformat(), score=round(0.75 - i / 97, 6))
        for i, turn in enumerate(turns)
    ])


def serve(port: int, memories: int) -> None:
    """Run the bare server until killed."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    result = recalled(memories)
    server = MCPServer("payload")

    @server.tool()
    def empty() -> RecallResult:
        return RecallResult(answer=None, memories=[])

    @server.tool(name="recalled")
    def recalled_tool() -> RecallResult:
        return result

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


def validation_ms(schema: dict[str, Any], instance: dict[str, Any], rounds: int = 2000) -> float:
    """Mean ms of the SDK client's output check of ``instance`` against ``schema``."""
    from jsonschema import exceptions, validators

    validator = validators.validator_for(schema)(schema)
    started = time.perf_counter()
    for _ in range(rounds):
        exceptions.best_match(validator.iter_errors(instance))
    return round((time.perf_counter() - started) * 1000 / rounds, 3)


async def measure(port: int, requests: int) -> dict[str, Any]:
    from mcp import Client

    times: dict[str, list[float]] = {"empty": [], "recalled": []}
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        structured: dict[str, Any] = {}
        for i in range(requests + 20):
            for name in ("empty", "recalled") if i % 2 == 0 else ("recalled", "empty"):
                started = time.perf_counter()
                result = await client.call_tool(name, {})
                if i >= 20:  # the first rounds warm up
                    times[name].append((time.perf_counter() - started) * 1000)
                structured[name] = result.structured_content
    report: dict[str, Any] = {name: percentiles(values) for name, values in times.items()}
    report["difference_p50_ms"] = round(report["recalled"]["p50"] - report["empty"]["p50"], 2)
    report["result_bytes"] = {name: len(json.dumps(value)) for name, value in structured.items()}
    report["client_output_check_ms"] = {name: validation_ms(schemas[name] or {}, structured[name])
                                        for name in ("empty", "recalled")}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=18830)
    parser.add_argument("--requests", type=int, default=400, help="calls of each tool")
    parser.add_argument("--memories", type=int, default=12, help="memories in the recall-sized result")
    parser.add_argument("--json", type=Path, default=None, help="write the report here too")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("mcp", "httpx", "uvicorn"):  # the SDK logs every request and session at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    if args.serve:
        serve(args.port, args.memories)
        return
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.payload", "--serve", "--port", str(args.port),
                                "--memories", str(args.memories)])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{args.port}/mcp", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit("the bare server did not start") from None
                time.sleep(0.2)
        report = {"load_before": os.getloadavg(), **anyio.run(measure, args.port, args.requests),
                  "load_after": os.getloadavg()}
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
