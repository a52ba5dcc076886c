"""The optional rerank endpoint, against a scripted /rerank server on 127.0.0.1 (real HTTP)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from mcp import Client

from mcp_memory.pipeline.rerank import _scores
from mcp_memory.settings import RecallSettings
from tools import served

pytestmark = pytest.mark.anyio

MEMORIES = [
    "I practise the violin every evening after work.",
    "The violin teacher moved our lesson to Thursday.",
    "My cello needs new strings before the concert.",
    "We bought a second-hand piano for the kids.",
]


class FakeRerank:
    """A /rerank server that records each request body and answers with a scripted reply.

    ``reply(body)`` returns (status, JSON body); the default scores a document by whether it
    holds ``favourite``, Cohere-style.
    """

    def __init__(self, favourite: str = "cello", shape: str = "cohere", status: int = 200) -> None:
        self.requests: list[dict[str, Any]] = []
        self.favourite, self.shape, self.status = favourite, shape, status
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                results = [
                    {"index": i, "relevance_score" if fake.shape == "cohere" else "score": float(fake.favourite in text)}
                    for i, text in enumerate(body["documents"])
                ]
                reply = {"results": results} if fake.shape == "cohere" else results
                data = json.dumps(reply if fake.status == 200 else {"error": "overloaded"}).encode()
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/rerank"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def fake_rerank() -> Iterator[FakeRerank]:
    fake = FakeRerank()
    yield fake
    fake.close()


@asynccontextmanager
async def _client_with(base_settings, **recall: object) -> AsyncIterator[Client]:
    settings = base_settings.model_copy(update={"recall": RecallSettings(**recall)})
    async with served(settings) as client:
        yield client


async def _recall(client, query: str, top_k: int = 2) -> tuple[list[str], dict[str, Any]]:
    for content in MEMORIES:
        await client.call_tool("store_memory", {"session": "s-rr", "content": content})
    result = await client.call_tool("recall_memory", {"session": "s-rr", "query": query, "top_k": top_k})
    audit = await client.call_tool("list_audits", {"session": "s-rr", "limit": 1})
    contents = [memory["content"] for memory in result.structured_content["memories"]]
    return contents, audit.structured_content["audits"][0]["detail"]


async def test_the_reranker_orders_the_candidates_it_is_sent(base_settings, deps, empty_tables, fake_rerank):
    async with _client_with(base_settings, rerank_url=fake_rerank.url, rerank_model="m1", rerank_api_key="k") as client:
        contents, detail = await _recall(client, "when is my violin lesson?")
    assert contents[0] == MEMORIES[2]  # the fake prefers the cello; fusion put the violin memories first
    [sent] = fake_rerank.requests
    assert (sent["path"], sent["auth"], sent["model"], sent["query"]) == ("/rerank", "Bearer k", "m1", "when is my violin lesson?")
    assert sorted(sent["documents"]) == sorted(MEMORIES) and sent["texts"] == sent["documents"]
    assert detail["rerank_note"] is None and "rerank" in detail["latency_ms"]


async def test_a_tei_shaped_reply_is_read_too(base_settings, deps, empty_tables):
    fake = FakeRerank(shape="tei")
    try:
        async with _client_with(base_settings, rerank_url=fake.url) as client:
            contents, _ = await _recall(client, "when is my violin lesson?")
    finally:
        fake.close()
    assert contents[0] == MEMORIES[2]


async def test_a_failing_reranker_keeps_the_fused_order_and_says_so(base_settings, deps, empty_tables):
    async with _client_with(base_settings) as client:
        fused, _ = await _recall(client, "when is my violin lesson?", top_k=4)
    fake = FakeRerank(status=503)
    try:
        async with _client_with(base_settings, rerank_url=fake.url) as client:
            contents, detail = await _recall(client, "when is my violin lesson?", top_k=4)
    finally:
        fake.close()
    assert contents == fused
    assert detail["rerank_note"].startswith("rerank failed, fused order kept: HTTPStatusError")


async def test_an_unreachable_reranker_keeps_the_fused_order(base_settings, deps, empty_tables):
    fake = FakeRerank()
    fake.close()  # nothing listens on its port any more
    async with _client_with(base_settings, rerank_url=fake.url, rerank_timeout_s=2.0) as client:
        contents, detail = await _recall(client, "when is my violin lesson?", top_k=4)
    assert len(contents) == 4
    assert detail["rerank_note"].startswith("rerank failed, fused order kept: ConnectError")


async def test_without_a_rerank_url_nothing_is_sent_and_the_audit_has_no_rerank_note(client):
    _, detail = await _recall(client, "when is my violin lesson?")
    assert "rerank_note" not in detail and "rerank" not in detail["latency_ms"]


def test_a_reply_with_an_index_out_of_range_is_refused():
    assert _scores({"results": [{"index": 1, "relevance_score": 0.5}]}, 2) == {1: 0.5}
    with pytest.raises(ValueError, match="valid index"):
        _scores({"results": [{"index": 2, "relevance_score": 0.5}]}, 2)
    with pytest.raises(ValueError, match="no results"):
        _scores({"data": []}, 2)
