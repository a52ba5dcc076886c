"""/metrics over real HTTP: exact counts after known calls, the token rule, host checks.

One ``mcp-memory serve --transport http`` process with a static token and a scripted answer
model (tests/fake_openai.py) on a database of its own; a second one with ``[metrics] public``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from bearer import INITIALIZE, configured_server, post, sha256, token_client, write_config
from fake_openai import ChatReply, FakeOpenAI
from processes import Spawner, create_database, drop_database, free_port, sdk_caller
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.anyio

ALPHA = "alpha-" + "a" * 40  # team:alpha:* only: still may read the metrics
TOKENS = [{"name": "alpha", "token_sha256": sha256(ALPHA), "sessions": ["team:alpha:*"]}]
SESSION = "team:alpha:notes"
STAGES = ("plan", "embed", "search", "fuse", "supersede", "answer")


@dataclass
class Served:
    port: int
    fake: FakeOpenAI

    def scrape(self, headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.port}/metrics", headers=headers, timeout=30)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition as {(name, labels): value}."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
async def served(pg_url: str, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    async with configured_server(pg_url, tmp_path_factory.mktemp("metrics"), TOKENS,
                            MCP_MEMORY_LLM__BASE_URL=fake.base_url, MCP_MEMORY_LLM__API_KEY="k",
                            MCP_MEMORY_LLM__ANSWER_MODEL="fake-answer", MCP_MEMORY_LLM__MAX_RETRIES="0") as (port, _):
        yield Served(port, fake)


async def test_metrics_count_exactly_the_calls_errors_memories_batches_and_tokens_made(served: Served) -> None:
    async with token_client(served.port, ALPHA) as client:
        call = sdk_caller(client)
        first = await call("store_memory", {"session": SESSION, "content": "The boiler is serviced in October"})
        assert not first.is_error, first.text
        again = await call("store_memory", {"session": SESSION, "content": "The boiler is serviced in October"})
        assert again.structured is not None and again.structured["deduplicated"] is True
        assert (await call("store_memory", {"session": SESSION, "content": "  "})).is_error
        assert (await call("store_memory", {"session": "team:beta:notes", "content": "Not mine"})).is_error
        memory_id = first.structured["memory_id"]
        for prompt, completion, cached in ((120, 7, 20), (80, 3, 0)):
            reply = json.dumps({"answerable": True, "answer": "October", "memory_ids": [memory_id]})
            served.fake.script_chat(ChatReply(content=reply, prompt_tokens=prompt, completion_tokens=completion,
                                              cached_tokens=cached))
            recalled = await call("recall_memory", {"session": SESSION, "query": "when is the boiler serviced?"})
            assert recalled.structured is not None and recalled.structured["answer"] == "October", recalled.text
        assert (await call("recall_memory", {"session": SESSION, "query": "boiler", "topk": 3})).is_error
        assert (await call("no_such_tool", {"session": SESSION})).is_error

    reply = served.scrape({"Authorization": f"Bearer {ALPHA}"})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    found = samples(reply.text)

    calls = {tool: value(found, "mcp_memory_tool_calls_total", tool=tool)
             for tool in ("store_memory", "recall_memory", "unknown", "delete_memory")}
    assert calls == {"store_memory": 4, "recall_memory": 3, "unknown": 1, "delete_memory": 0}
    errors = {(dict(labels)["tool"], dict(labels)["kind"]): v for (name, labels), v in found.items()
              if name == "mcp_memory_tool_errors_total"}
    assert errors == {("store_memory", "invalid_input"): 1, ("store_memory", "forbidden"): 1,
                      ("recall_memory", "invalid_input"): 1, ("unknown", "tool_error"): 1}
    assert value(found, "mcp_memory_tool_duration_seconds_count", tool="recall_memory") == 3
    assert value(found, "mcp_memory_tool_duration_seconds_bucket", tool="recall_memory", le="+Inf") == 3
    assert value(found, "mcp_memory_memories_stored_total") == 1  # the duplicate stored nothing new

    for stage in STAGES:  # both answered recalls ran every stage; no rerank endpoint, so no rerank stage
        assert value(found, "mcp_memory_recall_stage_duration_seconds_count", stage=stage) == 2, stage
        assert value(found, "mcp_memory_recall_stage_duration_seconds_bucket", stage=stage, le="0.01") is not None
    assert value(found, "mcp_memory_recall_stage_duration_seconds_count", stage="rerank") == 0

    # two stores (the duplicate is embedded before it is found) and two recall queries, one text each
    assert value(found, "mcp_memory_embedding_batch_texts_count") == 4
    assert value(found, "mcp_memory_embedding_batch_texts_sum") == 4
    assert value(found, "mcp_memory_embedding_queue_wait_seconds_count") == 4

    assert value(found, "mcp_memory_llm_calls_total", operation="answer", outcome="ok") == 2
    assert value(found, "mcp_memory_llm_tokens_total", operation="answer", type="prompt") == 200
    assert value(found, "mcp_memory_llm_tokens_total", operation="answer", type="completion") == 10
    assert value(found, "mcp_memory_llm_tokens_total", operation="answer", type="cached_prompt") == 20

    assert value(found, "mcp_memory_vector_copy_loads_total") == 1  # the first recall read the session
    assert value(found, "mcp_memory_vector_copy_hits_total") == 1  # the second found the copy current
    assert value(found, "mcp_memory_vector_copy_sessions") == 1
    assert value(found, "mcp_memory_pool_connections_max") == 10
    assert value(found, "mcp_memory_pool_connections_in_use") == 0
    assert value(found, "mcp_memory_pool_waiting") == 0
    assert SESSION not in reply.text and memory_id not in reply.text and "boiler" not in reply.text


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token-" + "x" * 30, f"Basic {ALPHA}"])
async def test_metrics_answer_401_without_a_valid_token_when_tokens_are_configured(
        served: Served, authorization: str | None) -> None:
    reply = served.scrape({} if authorization is None else {"Authorization": authorization})
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")
    assert "mcp_memory_" not in reply.text


async def test_metrics_check_the_host_header_as_mcp_does(served: Served) -> None:
    reply = served.scrape({"Authorization": f"Bearer {ALPHA}", "Host": "rebind.example"})
    assert reply.status_code == 421
    origin = served.scrape({"Authorization": f"Bearer {ALPHA}", "Origin": "http://rebind.example"})
    assert origin.status_code == 403


async def test_public_metrics_need_no_token_but_the_host_is_still_checked(
        pg_url: str, tmp_path: Path) -> None:
    """Also the --stateless app, which is built apart."""
    db_url = await create_database(pg_url)
    spawner = Spawner(tmp_path)
    try:
        config = write_config(tmp_path / "config.toml", TOKENS, {"metrics": {"public": True}})
        port = free_port()
        server = spawner.http(spawner.data_dir(), port, "--config", str(config), "--stateless",
                              MCP_MEMORY_DATABASE_URL=db_url)
        server.wait_healthy(port)
        public = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
        assert public.status_code == 200
        assert value(samples(public.text), "mcp_memory_pool_connections_max") == 10
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"Host": "rebind.example"}, timeout=30).status_code == 421
        assert post(port, INITIALIZE).status_code == 401  # public metrics open nothing else
    finally:
        spawner.close()
        await drop_database(pg_url, db_url)
