"""Tests for the FakeOpenAI test double, driven by the real openai client over HTTP."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time

import httpx
import openai
import pytest

try:
    from fake_openai import ChatReply, FakeOpenAI, default_embedding
except ImportError:  # tests/ is a package
    from tests.fake_openai import ChatReply, FakeOpenAI, default_embedding


def _client(fake: FakeOpenAI, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=timeout)


def _chat(client: openai.OpenAI, text: str = "hi", **kw: object) -> object:
    return client.chat.completions.create(model="fake-chat", messages=[{"role": "user", "content": text}], **kw)


def test_scripted_replies_in_order_and_recorded() -> None:
    with FakeOpenAI() as fake, _client(fake) as client:
        fake.script_chat(ChatReply(content='{"a": 1}'), ChatReply(content="<think>x</think>{}"))
        first = _chat(client, "one", response_format={"type": "json_object"})
        second = _chat(client, "two")
        assert first.choices[0].message.content == '{"a": 1}'
        assert second.choices[0].message.content == "<think>x</think>{}"
        assert first.choices[0].finish_reason == "stop"
        reqs = fake.chat_requests()
        assert [r.body["messages"][0]["content"] for r in reqs] == ["one", "two"]
        assert reqs[0].body["response_format"] == {"type": "json_object"}
        assert reqs[0].path == "/v1/chat/completions"
        assert reqs[0].headers["authorization"] == "Bearer test-key"


def test_usage_round_trips() -> None:
    with FakeOpenAI() as fake, _client(fake) as client:
        fake.script_chat(ChatReply(content="ok", prompt_tokens=100, completion_tokens=20,
                                   cached_tokens=64, reasoning_tokens=7, model="m-x"))
        resp = _chat(client)
        assert resp.model == "m-x"
        assert resp.usage.prompt_tokens == 100 and resp.usage.completion_tokens == 20
        assert resp.usage.total_tokens == 120
        assert resp.usage.prompt_tokens_details.cached_tokens == 64
        assert resp.usage.completion_tokens_details.reasoning_tokens == 7


@pytest.mark.parametrize("status", [500, 429, 503])
def test_error_status_raises(status: int) -> None:
    with FakeOpenAI() as fake, _client(fake) as client:
        fake.script_chat(ChatReply(status=status), ChatReply(content="after"))
        with pytest.raises(openai.APIStatusError) as info:
            _chat(client)
        assert info.value.status_code == status
        assert _chat(client).choices[0].message.content == "after"  # connection still usable


def test_empty_queue_gives_500_and_handler_fallback() -> None:
    with FakeOpenAI() as fake, _client(fake) as client:
        with pytest.raises(openai.InternalServerError) as info:
            _chat(client)
        assert info.value.status_code == 500
        assert "no scripted reply" in str(info.value)
        fake.set_chat_handler(lambda body: ChatReply(content="echo:" + body["messages"][0]["content"]))
        fake.script_chat(ChatReply(content="queued"))
        assert _chat(client, "a").choices[0].message.content == "queued"  # queue wins
        assert _chat(client, "b").choices[0].message.content == "echo:b"


def test_embeddings_list_in_order_deterministic() -> None:
    with FakeOpenAI(embedding_dim=16) as fake, _client(fake) as client:
        texts = ["alpha", "beta", "gamma"]
        r1 = client.embeddings.create(model="fake-embed", input=texts)  # client default: base64
        r2 = client.embeddings.create(model="fake-embed", input=texts, encoding_format="float")
        single = client.embeddings.create(model="fake-embed", input="beta")
        assert [d.index for d in r1.data] == [0, 1, 2]
        for d, text in zip(r1.data, texts):
            assert len(d.embedding) == 16
            assert d.embedding == pytest.approx(default_embedding(text, 16), abs=1e-6)
            assert math.isclose(sum(v * v for v in d.embedding), 1.0, rel_tol=1e-5)
        assert [d.embedding for d in r2.data] == [default_embedding(t, 16) for t in texts]
        assert single.data[0].embedding == r1.data[1].embedding
        assert r1.data[0].embedding != r1.data[1].embedding
        assert [r.body["input"] for r in fake.embedding_requests()] == [texts, texts, "beta"]


def test_embedding_fn_and_status() -> None:
    with FakeOpenAI(embedding_dim=3) as fake, _client(fake) as client:
        fake.set_embedding_fn(lambda text: [float(len(text)), 0.0, 1.0])
        resp = client.embeddings.create(model="e", input=["abcd"], encoding_format="float")
        assert resp.data[0].embedding == [4.0, 0.0, 1.0]
        fake.embedding_status = 503
        with pytest.raises(openai.APIStatusError) as info:
            client.embeddings.create(model="e", input=["x"])
        assert info.value.status_code == 503


def test_async_client_and_models() -> None:
    async def run(fake: FakeOpenAI) -> tuple[str | None, int, list[str]]:
        async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0, timeout=5) as client:
            chat = await client.chat.completions.create(model="fake-chat", messages=[{"role": "user", "content": "q"}])
            emb = await client.embeddings.create(model="fake-embed", input=["x", "y"])
            models = await client.models.list()
            return chat.choices[0].message.content, len(emb.data[1].embedding), [m.id for m in models.data]

    with FakeOpenAI(embedding_dim=8, embedding_model="emb-m") as fake:
        fake.script_chat(ChatReply(content="async ok"))
        assert asyncio.run(run(fake)) == ("async ok", 8, ["fake-chat", "emb-m"])


def test_unknown_path_404_and_raw_http() -> None:
    with FakeOpenAI() as fake, httpx.Client(timeout=5) as http:
        resp = http.post(fake.base_url + "/nope", json={})
        assert resp.status_code == 404
        assert resp.headers["content-type"] == "application/json"
        assert int(resp.headers["content-length"]) == len(resp.content)
        assert json.loads(resp.content)["error"]["message"].startswith("unknown path")
        assert fake.requests[-1].path == "/v1/nope"


def test_keep_alive_many_sequential_requests() -> None:
    with FakeOpenAI() as fake, _client(fake) as client:
        fake.script_chat(*[ChatReply(content=str(i)) for i in range(20)])
        started = time.monotonic()
        assert [_chat(client).choices[0].message.content for _ in range(20)] == [str(i) for i in range(20)]
        assert time.monotonic() - started < 5


def test_delayed_chat_timeout_and_prompt_stop() -> None:
    fake = FakeOpenAI()
    with fake, _client(fake, timeout=0.3) as client:
        fake.script_chat(ChatReply(content="late", delay_s=30))
        with pytest.raises(openai.APITimeoutError):
            _chat(client)
        started = time.monotonic()
    assert time.monotonic() - started < 2


def test_stop_releases_held_embedding_request() -> None:
    fake = FakeOpenAI()
    with fake:
        fake.embedding_delay_s = 30
        with _client(fake, timeout=0.3) as client, pytest.raises(openai.APITimeoutError):
            client.embeddings.create(model="e", input=["x"])
        started = time.monotonic()
    assert time.monotonic() - started < 2


def test_stop_while_client_still_waiting() -> None:
    held = threading.Event()
    errors: list[BaseException] = []

    def handler(body: dict) -> ChatReply:
        held.set()
        return ChatReply(content="never", delay_s=30)

    def call(client: openai.OpenAI) -> None:
        try:
            _chat(client)
        except openai.APIError as exc:
            errors.append(exc)

    with FakeOpenAI() as fake:
        client = _client(fake, timeout=10)
        fake.set_chat_handler(handler)
        worker = threading.Thread(target=call, args=(client,), daemon=True)
        worker.start()
        assert held.wait(5)
        started = time.monotonic()
    assert time.monotonic() - started < 2
    worker.join(5)
    assert not worker.is_alive()
    client.close()
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)
