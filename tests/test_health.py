"""Health that tells the truth: ``/health`` is 200 only while PostgreSQL answers a bounded
``SELECT 1`` (503 and the reason otherwise), ``/health/live`` only says the process runs, and an
embedded PostgreSQL that dies under the server (kill -9 of the postmaster) is started again by the
server itself.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import psutil
import pytest
from processes import (  # noqa: F401 - spawn and own_postgres are fixtures
    Spawner,
    free_port,
    http_tool,
    own_postgres,
    postgres_pids,
    spawn,
    start_postgres,
    wait_until,
)

HEALTH_BOUND_S = 3.0  # the SELECT 1 is bounded by 2 s; one more for HTTP on a busy machine


def _health(port: int, path: str = "/health") -> tuple[int, dict[str, str], float]:
    started = time.monotonic()
    reply = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=30.0)
    return reply.status_code, reply.json(), time.monotonic() - started


def test_health_reports_a_killed_embedded_postgres_and_the_server_starts_it_again(spawn: Spawner) -> None:
    data_dir = spawn.data_dir("data")
    port = free_port()
    server = spawn.http(data_dir, port, "--stateless", MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION="false")
    server.wait_healthy(port)
    code, body, _ = _health(port)
    assert code == 200 and body["status"] == "ready" and body["database"] == "ok", body
    stored = http_tool(port, "store_memory", {"session": "s-health", "content": "The boiler is serviced in October"})
    memory_id = stored[2]["memory_id"]
    [postmaster] = postgres_pids(data_dir)

    psutil.Process(postmaster).kill()  # kill -9: no shutdown, backends left to notice on their own
    wait_until(lambda: postmaster not in postgres_pids(data_dir), 20, "the killed postmaster to be gone")
    code, body, elapsed = _health(port)
    assert code == 503 and body["status"] == "database_unavailable", body  # the restart waits >= 1 s
    assert "database unavailable" in body["detail"] and elapsed < HEALTH_BOUND_S, (body, elapsed)
    live, body, _ = _health(port, "/health/live")
    assert live == 200 and body == {"status": "live"}

    wait_until(lambda: _health(port)[0] == 200, 30, "/health to answer 200 after the server restarted PostgreSQL")
    assert postgres_pids(data_dir) not in ([], [postmaster])
    recalled = http_tool(port, "recall_memory", {"session": "s-health", "query": "boiler"})
    assert not recalled[0] and [m["memory_id"] for m in recalled[2]["memories"]] == [memory_id]
    assert not http_tool(port, "store_memory", {"session": "s-health", "content": "Stored after the restart"})[0]
    assert server.proc.poll() is None
    assert "is running again" in server.stderr


def test_health_reports_an_external_postgres_that_stopped_or_hangs_and_recovers_with_it(
    spawn: Spawner, own_postgres: Path
) -> None:
    database = start_postgres(own_postgres)
    url = database.get_uri()
    port = free_port()
    server = spawn.http(spawn.data_dir("data"), port, MCP_MEMORY_DATABASE_URL=url,
                        MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION="false")
    server.wait_healthy(port)

    database.cleanup()  # pg_ctl stop: this process held the last handle
    code, body, elapsed = _health(port)
    assert code == 503 and body["status"] == "database_unavailable" and elapsed < HEALTH_BOUND_S, (body, elapsed)
    # /health needs no token: it names no host, port or user of the database (the server log does)
    parsed = httpx.URL(url)
    assert body["detail"] == "database unavailable: PostgreSQL cannot be reached (the server log says why)", body
    assert str(parsed.port) not in str(body) and (parsed.username or "postgres") not in str(body)
    wait_until(lambda: "health check: database unavailable" in server.stderr, 10, "the reason in the server log")
    assert _health(port, "/health/live")[0] == 200

    database = start_postgres(own_postgres)
    try:
        assert database.get_uri() == url
        code, body, _ = _health(port)
        assert code == 200 and body["database"] == "ok", body

        postmaster = psutil.Process(database.get_pid())
        postmaster.suspend()  # SIGSTOP: connections are accepted by the kernel and never answered
        try:
            code, body, elapsed = _health(port)
        finally:
            postmaster.resume()
        assert code == 503 and "did not answer SELECT 1 within 2.0 s" in body["detail"], body
        assert elapsed < HEALTH_BOUND_S, elapsed
        wait_until(lambda: _health(port)[0] == 200, 10, "/health to answer 200 once PostgreSQL runs on")
        assert server.proc.poll() is None
    finally:
        database.cleanup()
        server.kill()


@pytest.mark.slow  # soak or load: .ci/run runs it (-m slow)
@pytest.mark.anyio
async def test_a_flood_of_health_checks_shares_one_select_and_stays_ready(spawn: Spawner, own_postgres: Path) -> None:
    """/health needs no token: 250 at once (each once opened a connection of its own) used to take every
    free PostgreSQL connection ("too many clients already") and answer most of them 503."""
    import anyio

    database = start_postgres(own_postgres)
    try:
        port = free_port()
        server = spawn.http(spawn.data_dir("data"), port, MCP_MEMORY_DATABASE_URL=database.get_uri(),
                            MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION="false")
        server.wait_healthy(port)
        answers: list[tuple[int, str]] = []
        async with httpx.AsyncClient(timeout=60.0, limits=httpx.Limits(max_connections=300)) as client:
            async def check() -> None:
                reply = await client.get(f"http://127.0.0.1:{port}/health")
                answers.append((reply.status_code, reply.json().get("database", reply.json()["detail"])))

            async with anyio.create_task_group() as group:
                for _ in range(250):
                    group.start_soon(check)
        assert sorted(set(answers)) == [(200, "ok")], sorted(set(answers))[:3]
        assert len(answers) == 250
    finally:
        database.cleanup()
