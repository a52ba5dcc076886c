"""The optional LLM: an OpenAI-compatible chat endpoint for planning, answering and supersession.

``openai.AsyncOpenAI`` talks to any compatible server (the OpenAI API, LiteLLM, vLLM, Ollama,
llama.cpp, llama-cpp-python, LM Studio). The client retries 429 and 5xx with exponential backoff
(``max_retries``) and gives up after ``timeout_s``. Replies are asked for as JSON in the first
structured-output mode the endpoint takes (``formats.LADDER``: ``json_schema``, ``json_object``
with the schema, ``json_object``, plain text): a request the endpoint refuses for its
``response_format`` is not retried as it is but sent once more in the next mode down, and the mode
that answered is kept for that endpoint (base_url and model) for the life of the process. Every
request caps the reply at ``max_output_tokens``, as ``max_tokens``; an endpoint that refuses
``max_tokens`` and names ``max_completion_tokens`` (OpenAI's reasoning models) gets the request once
more with that field, which is then kept for it. A reply that does not parse gets one repair
attempt, unless it was cut at the cap (``finish_reason`` ``length``): that is given up at once. Reasoning models' ``<think>...</think>`` blocks are
stripped before parsing. Token usage of every call, a refused one included (as a call with an
error), is added to the ``llm_usage`` table under the session it served.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcp_memory.db.repository import Repository
from mcp_memory.errors import ChatError, MalformedReply
from mcp_memory.observe.metrics import Metrics
from mcp_memory.llm.formats import Mode, error_text, next_mode, parse_json_object, refuses_format, response_format
from mcp_memory.llm.formats import start_mode
from mcp_memory.settings import LlmSettings

if TYPE_CHECKING:
    import openai

__all__ = ["JsonReply", "LlmClient", "Role"]

logger = logging.getLogger("mcp_memory.llm")  # the name it had as llm.py

Role = Literal["plan", "answer", "supersede"]
# A reply longer than this many characters per token of llm.max_output_tokens is not read: no tokenizer
# makes tokens that long, and parsing a few hundred KB of broken JSON takes seconds on the event loop.
CHARS_PER_TOKEN = 32


@dataclass
class JsonReply:
    """A parsed reply and how it was obtained.

    Attributes:
        value: the JSON object (not validated against the schema; callers check fields).
        mode: the structured-output mode that answered (``json_schema``, ``json_object+schema``,
            ``json_object`` or ``text``).
        fallbacks: one line per mode the endpoint refused during this call, e.g.
            ``"json_schema refused (HTTP 500: ...)"``; empty when the first mode answered.
    """

    value: dict[str, Any]
    mode: Mode
    fallbacks: list[str] = field(default_factory=list)


def _body(exc: openai.APIStatusError) -> Any:
    """The error's body: parsed JSON, else its text."""
    try:
        return exc.response.json()
    except ValueError:
        return exc.response.text


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage_counts(usage: Any) -> dict[str, int]:
    """Token counts of a reply's ``usage``; fields a server leaves out (or sends as null) count 0."""
    counts = {"calls": 1}
    if usage is None:
        return counts
    counts["prompt_tokens"] = _count(getattr(usage, "prompt_tokens", None))
    counts["completion_tokens"] = _count(getattr(usage, "completion_tokens", None))
    counts["cached_prompt_tokens"] = _count(getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None))
    reasoning = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
    counts["reasoning_tokens"] = _count(reasoning)
    return counts


class _TokenFieldRefused(Exception):
    """The endpoint refused ``max_tokens`` and asked for ``max_completion_tokens``."""


TokenField = Literal["max_tokens", "max_completion_tokens"]


class LlmClient:
    """Chat completions for the ``plan``, ``answer`` and ``supersede`` roles, with usage accounting."""

    def __init__(self, settings: LlmSettings, repository: Repository, metrics: Metrics | None = None) -> None:
        self._settings = settings
        self._repository = repository
        self._metrics = metrics or Metrics()  # calls and tokens by operation, for /metrics
        self._client: openai.AsyncOpenAI | None = None
        self._start: Mode = start_mode(settings.structured_output, settings.json_schema_output)
        self._modes: dict[tuple[str, str], Mode] = {}  # (base_url, model) -> the mode that last answered
        self._token_fields: dict[tuple[str, str], TokenField] = {}  # endpoints that refused max_tokens
        if settings.base_url:
            from mcp_memory.llm.openai_client import OpenAIClient  # imports openai: only with an endpoint

            self._client = OpenAIClient(
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

    def mode_for(self, model: str) -> Mode:
        """The mode the next request to ``model`` is sent in: the one that last answered, else the start."""
        return self._modes.get((self._settings.base_url or "", model), self._start)

    async def complete_json(
        self, role: Role, system: str, user: str, schema_name: str, schema: dict[str, Any], *, session: str
    ) -> JsonReply:
        """Ask the ``role`` model for a JSON object that follows ``schema``.

        Args:
            role: ``plan``, ``answer`` or ``supersede``; picks the model and the usage bucket.
            system: the system prompt (it must itself ask for JSON: plain-text mode sends no format).
            user: the user message.
            schema_name: a name for the JSON schema (``response_format.json_schema.name``).
            schema: a JSON schema with an object at the root.
            session: the session the call serves; its token usage is counted there.

        Returns:
            The parsed object, the mode that answered and the modes refused on the way.

        Raises:
            ChatError: the role is off, or the endpoint failed or timed out after its retries (a
                refused format is not a failure while a mode below it is left).
            MalformedReply: the reply is not a JSON object even after one repair attempt.
        """
        model = self.model_for(role)
        if model is None or self._client is None:
            raise ChatError(f"no {role} model is configured")
        messages: list[dict[str, str]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        required = schema.get("required", ())
        fallbacks: list[str] = []
        text, mode, cut = await self._ask(session, role, model, messages, schema_name, schema, fallbacks)
        try:
            return JsonReply(parse_json_object(text, required), mode, fallbacks)
        except (ValueError, json.JSONDecodeError) as first:
            if cut:  # a model that ran to the cap (often whitespace inside the JSON) would run to it again
                raise MalformedReply(f"the {role} model's reply was cut at llm.max_output_tokens "
                                     f"({self._settings.max_output_tokens}) and is not JSON: {first}") from first
            logger.info("%s reply was not JSON (%s); asking once for a repair", role, first)
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": "That was not a valid JSON object. Reply with only the JSON object."},
        ]
        repaired, mode, _ = await self._ask(session, role, model, messages, schema_name, schema, fallbacks)
        try:
            return JsonReply(parse_json_object(repaired, required), mode, fallbacks)
        except (ValueError, json.JSONDecodeError) as exc:
            raise MalformedReply(f"the {role} model did not return JSON, even after a repair request: {exc}") from exc

    async def _ask(
        self, session: str, role: Role, model: str, messages: list[dict[str, str]], schema_name: str,
        schema: dict[str, Any], fallbacks: list[str],
    ) -> tuple[str, Mode, bool]:
        """One reply's text, the mode that answered and whether the reply was cut at the token cap;
        steps down once per refused mode, and switches once to ``max_completion_tokens``."""
        endpoint = (self._settings.base_url or "", model)
        mode = self.mode_for(model)
        while True:
            field = self._token_fields.get(endpoint, "max_tokens")
            try:
                text, cut = await self._call(session, role, model, messages,
                                             response_format(mode, schema_name, schema), field)
            except _TokenFieldRefused as refused:
                fallbacks.append(f"max_tokens refused ({refused})")
                logger.warning("the LLM endpoint refused max_tokens for model %s; using max_completion_tokens", model)
                self._token_fields[endpoint] = "max_completion_tokens"
                continue
            except _Refused as refused:
                lower = next_mode(mode)
                if lower is None:  # never: text mode sends no format to refuse
                    raise ChatError(f"the {role} model failed: {refused}") from None
                fallbacks.append(f"{mode} refused ({refused})")
                logger.warning("the LLM endpoint refused %s output for model %s (%s); using %s from now on",
                               mode, model, refused, lower)
                self._modes[endpoint] = mode = lower
                continue
            except MalformedReply:
                raise
            except ChatError as exc:
                if fallbacks:
                    raise ChatError(f"{exc} (after {'; '.join(fallbacks)})") from exc
                raise
            self._modes[endpoint] = mode
            return text, mode, cut

    async def _call(
        self, session: str, role: Role, model: str, messages: list[dict[str, str]], fmt: dict[str, Any] | None,
        token_field: TokenField,
    ) -> tuple[str, bool]:
        import openai  # imported with the client

        assert self._client is not None
        extra: dict[str, Any] = {token_field: self._settings.max_output_tokens}
        if fmt is not None:
            extra["response_format"] = fmt
        try:
            response = await self._client.chat.completions.create(
                model=model, messages=messages, temperature=0, **extra  # type: ignore[arg-type, call-overload]
            )
        except openai.APITimeoutError as exc:
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            raise ChatError(f"the {role} model timed out after {self._settings.timeout_s} s") from exc
        except openai.APIStatusError as exc:
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            body = _body(exc)
            if token_field == "max_tokens" and exc.status_code == 400 and "max_completion_tokens" in error_text(body):
                raise _TokenFieldRefused(f"HTTP 400: {error_text(body)}") from exc
            if fmt is not None and refuses_format(exc.status_code, body):
                raise _Refused(f"HTTP {exc.status_code}: {error_text(body)}") from exc
            raise ChatError(f"the {role} model failed: HTTP {exc.status_code}: {error_text(body)}") from exc
        except openai.OpenAIError as exc:
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            raise ChatError(f"the {role} model failed: {type(exc).__name__}: {exc}") from exc
        except ValueError as exc:  # a 200 whose body is not JSON: the client raises the decoder's error
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            raise ChatError(f"the {role} model's reply is not JSON: {exc}") from exc
        try:
            counts = _usage_counts(getattr(response, "usage", None))
            content = response.choices[0].message.content
            cut = response.choices[0].finish_reason == "length"
        except (AttributeError, TypeError, IndexError, KeyError):  # 200 but not a chat completion
            self._metrics.llm_call(role, {"calls": 1, "errors": 1})
            await self._repository.add_usage(session, role, model, {"calls": 1, "errors": 1})
            raise ChatError(f"the {role} model's reply is not a chat completion") from None
        self._metrics.llm_call(role, counts)
        await self._repository.add_usage(session, role, model, counts)
        if not isinstance(content, str) or not content.strip():
            raise ChatError(f"the {role} model returned an empty reply")
        longest = CHARS_PER_TOKEN * self._settings.max_output_tokens
        if len(content) > longest:  # parsing it would stall the event loop; no repair is asked for
            raise MalformedReply(f"the {role} model's reply is {len(content):,} characters, more than "
                                 f"llm.max_output_tokens allows ({longest:,}); not read")
        return content, cut

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()


class _Refused(Exception):
    """The endpoint refused the request's ``response_format``; the message says how."""
