"""The optional LLM: an OpenAI-compatible chat endpoint for planning, answering and supersession.

``openai.AsyncOpenAI`` talks to any compatible server (LiteLLM, vLLM, Ollama, DeepSeek,
OpenAI). The client retries 429 and 5xx with exponential backoff (``max_retries``) and
gives up after ``timeout_s``. Replies are asked for as JSON by schema where the endpoint
supports it; a reply that does not parse gets one repair attempt. Reasoning models'
``<think>...</think>`` blocks are stripped before parsing. Token usage of every call is added
to the ``llm_usage`` table under the session it served.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Literal

import openai

from mcp_memory.db.repository import Repository
from mcp_memory.errors import ChatError, MalformedReply
from mcp_memory.observe.metrics import Metrics
from mcp_memory.settings import LlmSettings

__all__ = ["LlmClient", "Role"]

logger = logging.getLogger(__name__)

Role = Literal["plan", "answer", "supersede"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def _parse_json(text: str) -> dict[str, Any]:
    """Parse a JSON object from a reply, ignoring ``<think>`` blocks and code fences."""
    cleaned = _FENCE.sub("", _THINK.sub("", text).strip()).strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start == -1 or end < start:
        raise ValueError("no JSON object in the reply")
    value = json.loads(cleaned[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("the reply is not a JSON object")
    return value


class LlmClient:
    """Chat completions for the ``plan``, ``answer`` and ``supersede`` roles, with usage accounting."""

    def __init__(self, settings: LlmSettings, repository: Repository, metrics: Metrics | None = None) -> None:
        self._settings = settings
        self._repository = repository
        self._metrics = metrics or Metrics()  # calls and tokens by operation, for /metrics
        self._client: openai.AsyncOpenAI | None = None
        if settings.base_url:
            self._client = openai.AsyncOpenAI(
                base_url=settings.base_url,
                api_key=settings.api_key or "not-needed",
                timeout=settings.timeout_s,
                max_retries=settings.max_retries,
            )

    def model_for(self, role: Role) -> str | None:
        """The model configured for ``role``, or None when that role is off."""
        if self._client is None:
            return None
        models = {"plan": self._settings.plan_model, "answer": self._settings.answer_model,
                  "supersede": self._settings.supersede_model}
        return models[role]

    async def complete_json(
        self, role: Role, system: str, user: str, schema_name: str, schema: dict[str, Any], *, session: str
    ) -> dict[str, Any]:
        """Ask the ``role`` model for a JSON object that follows ``schema``.

        Args:
            role: ``plan``, ``answer`` or ``supersede``; picks the model and the usage bucket.
            system: the system prompt.
            user: the user message.
            schema_name: a name for the JSON schema (``response_format.json_schema.name``).
            schema: a JSON schema with an object at the root.
            session: the session the call serves; its token usage is counted there.

        Returns:
            The parsed object (not validated against the schema; callers check fields).

        Raises:
            ChatError: the role is off, or the endpoint failed or timed out after its retries.
            MalformedReply: the reply is not a JSON object even after one repair attempt.
        """
        model = self.model_for(role)
        if model is None or self._client is None:
            raise ChatError(f"no {role} model is configured")
        messages: list[dict[str, str]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        response_format: dict[str, Any] = {"type": "json_object"}
        if self._settings.json_schema_output:
            response_format = {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema}}
        text = await self._call(session, role, model, messages, response_format)
        try:
            return _parse_json(text)
        except (ValueError, json.JSONDecodeError) as first:
            logger.info("%s reply was not JSON (%s); asking once for a repair", role, first)
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": "That was not a valid JSON object. Reply with only the JSON object."},
        ]
        repaired = await self._call(session, role, model, messages, response_format)
        try:
            return _parse_json(repaired)
        except (ValueError, json.JSONDecodeError) as exc:
            raise MalformedReply(f"the {role} model did not return JSON, even after a repair request: {exc}") from exc

    async def _call(
        self, session: str, role: Role, model: str, messages: list[dict[str, str]], response_format: dict[str, Any]
    ) -> str:
        assert self._client is not None
        try:
            response = await self._client.chat.completions.create(
                model=model, messages=messages, response_format=response_format, temperature=0  # type: ignore[arg-type]
            )
        except openai.APITimeoutError as exc:
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            raise ChatError(f"the {role} model timed out after {self._settings.timeout_s} s") from exc
        except openai.OpenAIError as exc:
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            raise ChatError(f"the {role} model failed: {type(exc).__name__}: {exc}") from exc
        usage = response.usage
        counts = {"calls": 1}
        if usage is not None:
            counts["prompt_tokens"] = usage.prompt_tokens or 0
            counts["completion_tokens"] = usage.completion_tokens or 0
            details = usage.prompt_tokens_details
            counts["cached_prompt_tokens"] = (details.cached_tokens or 0) if details else 0
            reasoning = usage.completion_tokens_details
            counts["reasoning_tokens"] = (reasoning.reasoning_tokens or 0) if reasoning else 0
        self._metrics.llm_call(role, counts)
        await self._repository.add_usage(session, role, model, counts)
        content = response.choices[0].message.content if response.choices else None
        if not content:
            raise ChatError(f"the {role} model returned an empty reply")
        return content

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
