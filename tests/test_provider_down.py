"""Outside services down: the embedding endpoint or the LLM unreachable or failing.

- Embedding down: store fails cleanly with nothing written (no memory, chunk, key or audit); a
  retry with the idempotency key of a store that had committed is still answered (it needs no
  embedding); recall degrades to the keyword and time lists and its audit row says so.
- LLM down (planner, answer and supersession models at a closed port): store keeps the memory and
  audits the failed supersession; recall answers with the ranked memories, ``answer`` null, and
  the audit row says why.

The embedding endpoint and the LLM are tests/fake_openai.py, or a closed port.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from conftest import make_settings
from fake_openai import FakeOpenAI
from mcp import Client
from processes import free_port, fresh_db  # noqa: F401 - fresh_db is a fixture

from tools import served

pytestmark = pytest.mark.anyio

FACTS = ["The boiler is serviced in October by Heatwise", "My sister lives in Lisbon near the river"]


def _served_with_embeddings(base_url: str, url: str, work_dir: Path) -> AbstractAsyncContextManager[Client]:
    return served(make_settings(url, work_dir, embedding={
        "provider": "openai", "base_url": base_url, "model": "fake-embed", "dim": 384, "max_retries": 0,
        "timeout_s": 5}))


async def _counts(url: str) -> dict[str, int]:
    connection = await asyncpg.connect(url)
    try:
        return {table: await connection.fetchval(f"SELECT count(*) FROM {table}")
                for table in ("memories", "memory_chunks", "idempotency_keys", "audits")}
    finally:
        await connection.close()


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _last_audit(client: Client, session: str) -> dict[str, Any]:
    audits = await client.call_tool("list_audits", {"session": session, "limit": 1})
    return audits.structured_content["audits"][0]["detail"]


@pytest.mark.parametrize("failure", ["http-500", "closed-port"])
async def test_store_with_the_embedding_endpoint_down_fails_cleanly_and_writes_nothing(fresh_db, work_dir, failure):
    with FakeOpenAI(embedding_dim=384) as fake:
        fake.embedding_status = 500
        base_url = fake.base_url if failure == "http-500" else f"http://127.0.0.1:{free_port()}/v1"
        async with _served_with_embeddings(base_url, fresh_db, work_dir) as client:
            result = await client.call_tool("store_memory", {"session": "s-emb", "content": FACTS[0],
                                                             "idempotency_key": "k-1"})
            assert result.is_error
            assert "embedding provider" in _text(result) and "\n" not in _text(result)
            assert await _counts(fresh_db) == {"memories": 0, "memory_chunks": 0, "idempotency_keys": 0, "audits": 0}


async def test_recall_with_the_embedding_endpoint_down_uses_the_keyword_lists_and_says_so(fresh_db, work_dir):
    with FakeOpenAI(embedding_dim=384) as fake:
        async with _served_with_embeddings(fake.base_url, fresh_db, work_dir) as client:
            ids = []
            for fact in FACTS:
                stored = await client.call_tool("store_memory", {"session": "s-emb", "content": fact,
                                                                 "idempotency_key": fact[:20]})
                ids.append(stored.structured_content["memory_id"])
            fake.embedding_status = 500
            requests_before = len(fake.embedding_requests())

            result = await client.call_tool("recall_memory", {"session": "s-emb", "query": "Who services the boiler?"})
            assert not result.is_error, _text(result)
            assert result.structured_content["memories"][0]["memory_id"] == ids[0]
            detail = await _last_audit(client, "s-emb")
            assert "embedding failed, keyword lists only" in detail["embed_note"]
            assert detail["candidates"] and not any(name.startswith("vector") for name in detail["candidates"])

            # the first reply of a store was lost and the provider is down now: the retry still gets its id
            retried = await client.call_tool("store_memory", {"session": "s-emb", "content": FACTS[1],
                                                              "idempotency_key": FACTS[1][:20]})
            assert not retried.is_error and retried.structured_content["memory_id"] == ids[1]
            assert retried.structured_content["replayed"] is True
            assert len(fake.embedding_requests()) == requests_before + 1, "only the recall tried to embed"


async def test_an_unreachable_llm_leaves_stores_stored_and_recalls_ranked_without_an_answer(
    pg_url, work_dir, empty_tables
):
    closed = f"http://127.0.0.1:{free_port()}/v1"
    settings = make_settings(pg_url, work_dir, llm={
        "base_url": closed, "api_key": "k", "plan_model": "p", "answer_model": "a", "supersede_model": "s",
        "timeout_s": 2.0, "max_retries": 0})
    async with served(settings) as client:
        ids = []
        for fact in ("Alice lives in Berlin, in Kreuzberg.", "Alice lives in Lisbon now, near the river."):
            stored = await client.call_tool("store_memory", {"session": "s-llm", "content": fact})
            assert not stored.is_error, _text(stored)
            assert stored.structured_content["superseded"] == []
            ids.append(stored.structured_content["memory_id"])
        supersede = await _last_audit(client, "s-llm")
        assert supersede["candidates"] == [ids[0]] and "supersede model failed" in supersede["note"], supersede

        result = await client.call_tool("recall_memory", {"session": "s-llm", "query": "Where does Alice live?"})
        assert not result.is_error, _text(result)
        assert result.structured_content["answer"] is None
        assert {m["memory_id"] for m in result.structured_content["memories"]} == set(ids)
        detail = await _last_audit(client, "s-llm")
        assert any("planner failed, literal query used" in note for note in detail["plan_notes"]), detail
        assert detail["answer_note"] and "failed" in detail["answer_note"], detail
