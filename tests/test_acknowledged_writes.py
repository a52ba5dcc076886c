"""A memory is acknowledged only after its transaction committed, every vector included.

No memory row exists without its vectors: window 0 lives in ``memories.embedding`` (NOT NULL),
windows 1..n in ``memory_chunks``, all written in the insert's one transaction after every window
was embedded. An embedding that fails part-way (the endpoint answered for the first window, then
failed) leaves nothing: no memory, no chunk, no idempotency key.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import asyncpg
import pytest
from conftest import make_settings
from fake_openai import FakeOpenAI, default_embedding
from mcp import Client
from processes import fresh_db  # noqa: F401 - a fixture
from tools import served

pytestmark = pytest.mark.anyio

WINDOW_CHARS = 64  # chunk_tokens 16 x 4 characters per token, no overlap (OpenAIEmbedder.windows)


def _served_with(fake: FakeOpenAI, url: str, work_dir: Path) -> AbstractAsyncContextManager[Client]:
    return served(make_settings(url, work_dir, embedding={
        "provider": "openai", "base_url": fake.base_url, "model": "fake-embed", "dim": 384, "batch_size": 1,
        "max_retries": 0, "chunk_tokens": 16, "chunk_overlap_tokens": 0}))


async def _table_counts(url: str) -> dict[str, int]:
    connection = await asyncpg.connect(url)
    try:
        return {table: await connection.fetchval(f"SELECT count(*) FROM {table}")
                for table in ("memories", "memory_chunks", "idempotency_keys")}
    finally:
        await connection.close()


async def test_an_embedding_that_fails_after_the_first_window_stores_nothing(fresh_db, work_dir):
    content = "A" * WINDOW_CHARS + "B" * (WINDOW_CHARS - 8) + "BROKEN!!" + "C" * WINDOW_CHARS  # three windows

    def embed(text: str) -> list[float]:
        return [0.5, 0.5] if "BROKEN" in text else default_embedding(text, 384)  # window 1 comes back malformed

    with FakeOpenAI(embedding_dim=384) as fake:
        fake.set_embedding_fn(embed)
        async with _served_with(fake, fresh_db, work_dir) as client:
            result = await client.call_tool("store_memory", {"session": "s-ack", "content": content,
                                                             "idempotency_key": "k-1"})
            assert result.is_error
            assert "returned 2-dim vectors" in result.content[0].text
            assert len(fake.embedding_requests()) == 2, "window 0 was embedded, window 1 failed"
            assert await _table_counts(fresh_db) == {"memories": 0, "memory_chunks": 0, "idempotency_keys": 0}

            fake.set_embedding_fn(lambda text: default_embedding(text, 384))  # the provider recovers: the retry stores
            retried = await client.call_tool("store_memory", {"session": "s-ack", "content": content,
                                                              "idempotency_key": "k-1"})
            assert not retried.is_error, retried.content[0].text
            assert retried.structured_content["replayed"] is False
            assert await _table_counts(fresh_db) == {"memories": 1, "memory_chunks": 2, "idempotency_keys": 1}


async def test_an_acknowledged_long_memory_has_a_vector_for_every_window(client, pg_url, deps):
    ready = await deps.ready()
    content = " ".join(f"Paragraph {n}: the quarterly report for region {n} was filed on time." for n in range(60))
    windows = ready.embedder.windows(content)
    assert len(windows) >= 3

    stored = await client.call_tool("store_memory", {"session": "s-ack", "content": content})
    assert not stored.is_error

    connection = await asyncpg.connect(pg_url)
    try:
        row = await connection.fetchrow(
            "SELECT m.embedding IS NOT NULL AS has_vector,"
            " (SELECT array_agg(chunk_no ORDER BY chunk_no) FROM memory_chunks c"
            "   WHERE c.session = m.session AND c.memory_id = m.memory_id) AS chunks"
            " FROM memories m WHERE session = 's-ack' AND memory_id = $1::uuid",
            stored.structured_content["memory_id"],
        )
        not_null = await connection.fetchval(
            "SELECT is_nullable FROM information_schema.columns WHERE table_name = 'memories' AND column_name = 'embedding'"
        )
    finally:
        await connection.close()
    assert row["has_vector"] and list(row["chunks"]) == list(range(1, len(windows)))
    assert not_null == "NO", "a memory row cannot exist without its window-0 vector"
