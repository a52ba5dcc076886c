"""The servers people run, as the scripted OpenAI-compatible server plays them (``fake_profiles``):
structured output that is refused falls back once per mode, the mode that answered is kept per
endpoint, the audit names it, usage counts what each server reports, reasoning is stripped, and
every error shape degrades the call cleanly. All over HTTP, through the MCP tools."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from conftest import make_settings
from fake_openai import ChatReply, FakeOpenAI
from fake_profiles import request_mode
from mcp import Client

from tools import call, served, store

pytestmark = pytest.mark.anyio

MEMORY_ID = re.compile(r'<memory id="([^"]+)"')  # both prompts number their memories 1..n
LOCKER = "The gym locker code is 4417"


@asynccontextmanager
async def _server(pg_url, work_dir, fake: FakeOpenAI, **llm: Any) -> AsyncIterator[Client]:
    settings = make_settings(pg_url, work_dir, llm={"base_url": fake.base_url, "api_key": "k", "timeout_s": 2.0,
                                                    "max_retries": 0, **llm})
    async with served(settings) as client:
        yield client


def _by_role(body: dict[str, Any]) -> ChatReply:
    """Replies as each role's model: the planner adds a query, the answer cites the first candidate."""
    if body["model"] == "fake-plan":
        return ChatReply(content=json.dumps({"queries": ["gym locker code"], "time_window": None}))
    if body["model"] == "fake-supersede":
        picks = [{"id": ref, "old": "4417", "new": "9021"} for ref in MEMORY_ID.findall(body["messages"][-1]["content"])]
        return ChatReply(content=json.dumps({"superseded": picks, "reason": "the code changed"}))
    cited = MEMORY_ID.findall(body["messages"][-1]["content"])[:1]
    return ChatReply(content=json.dumps({"answerable": True, "answer": "4417", "memory_ids": cited}),
                     prompt_tokens=100, completion_tokens=20)


def _modes(fake: FakeOpenAI, model: str | None = None) -> list[str]:
    return [request_mode(r.body) for r in fake.chat_requests() if model is None or r.body["model"] == model]


async def _recall(client: Client, session: str = "s", query: str = "what is my locker code?") -> dict[str, Any]:
    return await call(client, "recall_memory", {"session": session, "query": query})


async def _audit(client: Client, session: str = "s", kind: str = "recall") -> dict[str, Any]:
    return (await call(client, "list_audits", {"session": session, "limit": 1, "kind": kind}))["audits"][0]["detail"]


async def _usage(client: Client) -> dict[str, dict[str, Any]]:
    return {op["operation"]: op for op in (await call(client, "usage_stats", {}))["operations"]}


async def _recall_twice(client: Client) -> tuple[dict[str, Any], ...]:
    """Two recalls of the locker code: (first, its audit, second, its audit, the answer's usage)."""
    first = await _recall(client)
    first_audit = await _audit(client)
    second = await _recall(client)
    second_audit = await _audit(client)
    return first, first_audit, second, second_audit, (await _usage(client))["answer"]


@pytest.mark.parametrize("profile", ["llama-cpp-python", "llama-server-2024", "vllm", "plain-text-errors"])
async def test_a_refused_json_schema_is_retried_once_with_json_object_and_the_schema_which_is_then_kept(
    pg_url, work_dir, fake, empty_tables, profile
):
    """llama-cpp-python answers json_schema with HTTP 500: with retries on, the client would repeat it
    twice with backoff; it is sent once, then in the next mode, and never again for this model."""
    fake.profile = profile
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer", max_retries=2) as client:
        ids = [await store(client, "s", LOCKER)]
        first, first_audit, second, second_audit, usage = await _recall_twice(client)

    assert first["answer"] == second["answer"] == "4417"
    assert [m["memory_id"] for m in first["memories"]] == ids
    assert _modes(fake) == ["json_schema", "json_object+schema", "json_object+schema"]
    assert fake.chat_requests()[1].body["response_format"]["schema"]["required"] == ["answerable", "answer", "memory_ids"]
    assert first_audit["llm_modes"] == second_audit["llm_modes"] == {"answer": "json_object+schema"}
    [fallback] = first_audit["llm_fallbacks"]
    assert fallback.startswith("answer: json_schema refused (HTTP ") and "response_format" in fallback
    assert second_audit["llm_fallbacks"] == []
    assert (usage["calls"], usage["errors"], usage["prompt_tokens"], usage["completion_tokens"]) == (3, 1, 200, 40)


@pytest.mark.parametrize("profile", ["openai", "ollama", "lmstudio"])
async def test_a_server_that_takes_json_schema_is_asked_once_per_call(pg_url, work_dir, fake, empty_tables, profile):
    fake.profile = profile
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        result = await _recall(client)
        audit = await _audit(client)

    assert result["answer"] == "4417"
    assert _modes(fake) == ["json_schema"]
    assert fake.chat_requests()[0].body["response_format"]["json_schema"]["name"] == "cited_answer"
    assert audit["llm_modes"] == {"answer": "json_schema"} and audit["llm_fallbacks"] == []


@pytest.mark.parametrize("profile", ["litellm", "text-only"])
async def test_a_server_that_refuses_every_format_is_asked_in_plain_text_and_the_prompt_asks_for_json(
    pg_url, work_dir, fake, empty_tables, profile
):
    fake.profile = profile
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        first = await _recall(client)
        audit = await _audit(client)
        second = await _recall(client)

    assert first["answer"] == second["answer"] == "4417"
    assert _modes(fake) == ["json_schema", "json_object+schema", "json_object", "text", "text"]
    assert "response_format" not in fake.chat_requests()[-1].body
    assert "Reply with JSON only" in fake.chat_requests()[-1].body["messages"][0]["content"]
    assert audit["llm_modes"] == {"answer": "text"}
    assert [line.split(" refused")[0] for line in audit["llm_fallbacks"]] == [
        "answer: json_schema", "answer: json_object+schema", "answer: json_object"]


async def test_lm_studio_asked_for_json_object_first_falls_to_text(pg_url, work_dir, fake, empty_tables):
    """``llm.structured_output = "json_object"`` starts there; LM Studio refuses it with a string error body."""
    fake.profile = "lmstudio"
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer", structured_output="json_object") as client:
        await store(client, "s", LOCKER)
        result = await _recall(client)
        audit = await _audit(client)

    assert result["answer"] == "4417"
    assert _modes(fake) == ["json_object+schema", "json_object", "text"]
    assert "'response_format.type' must be 'json_schema' or 'text'" in audit["llm_fallbacks"][0]


@pytest.mark.parametrize(("settings", "first"), [({"structured_output": "text"}, "text"),
                                                 ({"json_schema_output": False}, "json_object+schema")])
async def test_the_settings_choose_the_first_mode(pg_url, work_dir, fake, empty_tables, settings, first):
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer", **settings) as client:
        await store(client, "s", LOCKER)
        assert (await _recall(client))["answer"] == "4417"

    assert _modes(fake) == [first]


async def test_the_mode_is_kept_per_model_so_planner_and_answer_model_each_fall_back_once(
    pg_url, work_dir, fake, empty_tables
):
    fake.profile = "llama-cpp-python"
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, plan_model="fake-plan", answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        await _recall(client)
        audit = await _audit(client)
        await _recall(client)

    assert _modes(fake, "fake-plan") == ["json_schema", "json_object+schema", "json_object+schema"]
    assert _modes(fake, "fake-answer") == ["json_schema", "json_object+schema", "json_object+schema"]
    assert audit["queries"] == ["what is my locker code?", "gym locker code"]
    assert audit["llm_modes"] == {"plan": "json_object+schema", "answer": "json_object+schema"}
    assert [line.split(" (")[0] for line in audit["llm_fallbacks"]] == [
        "plan: json_schema refused", "answer: json_schema refused"]


async def test_a_plain_server_error_is_not_taken_for_a_refusal(pg_url, work_dir, fake, empty_tables):
    """A 500 that says nothing of the format is retried in the same mode by the client, as before."""
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer", max_retries=1) as client:
        await store(client, "s", LOCKER)
        fake.script_chat(ChatReply(status=500))
        result = await _recall(client)
        audit = await _audit(client)

    assert result["answer"] == "4417"
    assert _modes(fake) == ["json_schema", "json_schema"]
    assert audit["llm_modes"] == {"answer": "json_schema"} and audit["llm_fallbacks"] == []


async def test_supersession_on_store_falls_back_the_same_way_and_its_audit_names_the_mode(
    pg_url, work_dir, fake, empty_tables
):
    fake.profile = "llama-cpp-python"
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, supersede_model="fake-supersede") as client:
        old = await store(client, "s", LOCKER)
        stored = await call(client, "store_memory", {"session": "s", "content": "The gym locker code is now 9021"})
        audit = await _audit(client, kind="supersede")

    assert stored["superseded"] == [old]
    assert _modes(fake) == ["json_schema", "json_object+schema"]
    assert audit["mode"] == "json_object+schema" and audit["fallbacks"][0].startswith("json_schema refused (HTTP 500")


@pytest.mark.parametrize("profile", ["think-blocks", "think-unopened"])
async def test_reasoning_before_the_json_is_stripped_from_plans_and_answers(
    pg_url, work_dir, fake, empty_tables, profile
):
    fake.profile = profile
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, plan_model="fake-plan", answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        result = await _recall(client)
        audit = await _audit(client)

    assert result["answer"] == "4417"
    assert audit["queries"] == ["what is my locker code?", "gym locker code"]
    assert audit["plan_notes"] == [] and len(fake.chat_requests()) == 2  # no repair request was needed


@pytest.mark.parametrize(
    ("profile", "counted"),
    [
        ("openai", (100, 20, 60, 7)),  # cached and reasoning token details
        ("ollama", (100, 20, 0, 0)),  # prompt and completion only
        ("null-details", (100, 20, 0, 0)),  # details sent as null
        ("no-usage", (0, 0, 0, 0)),  # no usage at all: the call still counts
    ],
)
async def test_usage_counts_what_each_server_reports(pg_url, work_dir, fake, empty_tables, profile, counted):
    fake.profile = profile

    def reply(body: dict[str, Any]) -> ChatReply:
        cited = MEMORY_ID.findall(body["messages"][-1]["content"])[:1]
        return ChatReply(content=json.dumps({"answerable": True, "answer": "4417", "memory_ids": cited}),
                         prompt_tokens=100, completion_tokens=20, cached_tokens=60, reasoning_tokens=7)

    fake.set_chat_handler(reply)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        assert (await _recall(client))["answer"] == "4417"
        usage = (await _usage(client))["answer"]

    assert usage["calls"] == 1 and usage["errors"] == 0
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["cached_prompt_tokens"],
            usage["reasoning_tokens"]) == counted


@pytest.mark.parametrize("profile", ["openai", "llama-cpp-python", "vllm", "lmstudio", "litellm", "text-only",
                                     "plain-text-errors"])
async def test_every_error_shape_degrades_the_call_with_the_reason_in_the_audit(
    pg_url, work_dir, fake, empty_tables, profile
):
    """OpenAI's error object, vLLM's top-level one, LM Studio's string, FastAPI's detail, a text/plain
    page: the planner falls back to the literal query and recall returns the ranked memories."""
    fake.profile = profile
    async with _server(pg_url, work_dir, fake, plan_model="fake-plan", answer_model="fake-answer",
                       structured_output="text") as client:
        ids = [await store(client, "s", LOCKER)]
        fake.script_chat(ChatReply(status=503), ChatReply(status=503))
        result = await _recall(client)
        audit = await _audit(client)

    assert result["answer"] is None and [m["memory_id"] for m in result["memories"]] == ids
    assert audit["queries"] == ["what is my locker code?"]
    [note] = audit["plan_notes"]
    assert note.startswith("planner failed, literal query used: the plan model failed: HTTP 503: ")
    assert "scripted error 503" in note and "scripted error 503" in audit["answer_note"]
    assert audit["llm_modes"] == {}


@pytest.mark.parametrize("raw", ["<html><body>502 Bad Gateway</body></html>", '{"id": "x", "object": "chat"}',
                                 '{"choices": [{"message": null}]}'])
async def test_a_200_that_is_not_a_chat_completion_degrades_the_call(pg_url, work_dir, fake, empty_tables, raw):
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer") as client:
        ids = [await store(client, "s", LOCKER)]
        fake.script_chat(ChatReply(raw_body=raw))
        result = await _recall(client)
        audit = await _audit(client)
        usage = (await _usage(client))["answer"]

    assert result["answer"] is None and [m["memory_id"] for m in result["memories"]] == ids
    assert audit["answer_note"].startswith("no answer, ranked memories returned: the answer model")
    assert usage["calls"] == 1 and usage["errors"] == 1



async def test_an_answer_nested_past_the_decoders_limit_is_an_unusable_reply_not_an_internal_error(
        pg_url, work_dir, fake, empty_tables):
    """A reply nested deeper than Python's JSON decoder recurses (a model looping on ``{"a":``)
    raised RecursionError out of the recall: the caller got an internal error instead of the
    refusal an unusable reply gives."""
    fake.set_chat_handler(lambda body: ChatReply(content='{"answer":' * 3000))  # under the length cap
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        result = await _recall(client)

    assert result["answerable"] is False and result["memories"] == []  # what any unusable answer reply gives
    assert result["answer"] == "Not enough memories in this session to answer this question."
    assert len(fake.chat_requests()) == 2  # the reply and the one repair request


async def test_every_request_caps_the_reply_at_max_output_tokens(pg_url, work_dir, fake, empty_tables):
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, plan_model="fake-plan", answer_model="fake-answer",
                       max_output_tokens=300) as client:
        await store(client, "s", LOCKER)
        assert (await _recall(client))["answer"] == "4417"

    assert [(r.body["model"], r.body.get("max_tokens")) for r in fake.chat_requests()] == [
        ("fake-plan", 300), ("fake-answer", 300)]


async def test_a_reply_cut_at_the_cap_is_given_up_without_a_repair_request(pg_url, work_dir, fake, empty_tables):
    """Qwen2.5-0.5B behind llama-cpp-python, in json_object mode, once wrote spaces inside its JSON until
    the 4,096-token context was full (4.5 minutes at 15 tokens/s); a repair request would do it again."""
    fake.profile = "llama-cpp-python"
    fake.set_chat_handler(lambda body: ChatReply(content='{"answerable": true, "answer":' + " " * 500,
                                                 finish_reason="length"))
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer") as client:
        await store(client, "s", LOCKER)
        result = await _recall(client)
        audit = await _audit(client)

    assert (result["answer"], result["memories"], result["answerable"]) == (
        "Not enough memories in this session to answer this question.", [], False)
    assert _modes(fake) == ["json_schema", "json_object+schema"]  # the refusal, then the one cut reply
    assert audit["answer_note"].startswith(
        "answer model reply unusable: the answer model's reply was cut at llm.max_output_tokens (1024) and is not JSON")


async def test_an_endpoint_that_refuses_max_tokens_is_asked_with_max_completion_tokens_which_is_then_kept(
    pg_url, work_dir, fake, empty_tables
):
    fake.profile = "openai-reasoning"
    fake.set_chat_handler(_by_role)
    async with _server(pg_url, work_dir, fake, answer_model="fake-answer", max_retries=2) as client:
        await store(client, "s", LOCKER)
        first, first_audit, second, second_audit, usage = await _recall_twice(client)

    assert first["answer"] == second["answer"] == "4417"
    sent = [{k: r.body[k] for k in ("max_tokens", "max_completion_tokens") if k in r.body} for r in fake.chat_requests()]
    assert sent == [{"max_tokens": 1024}, {"max_completion_tokens": 1024}, {"max_completion_tokens": 1024}]
    [fallback] = first_audit["llm_fallbacks"]
    assert fallback.startswith("answer: max_tokens refused (HTTP 400: Unsupported parameter: 'max_tokens'")
    assert second_audit["llm_fallbacks"] == [] and second_audit["llm_modes"] == {"answer": "json_schema"}
    assert (usage["calls"], usage["errors"]) == (3, 1)
