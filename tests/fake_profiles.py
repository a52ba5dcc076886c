"""Server profiles for the scripted OpenAI-compatible server: each is one switch,
``FakeOpenAI(profile="llama-cpp-python")`` (or ``fake.profile = ...``), that makes the fake behave as
that kind of server does in what mcp-memory depends on: which ``response_format`` it refuses and
with what status and body, the shape of its error bodies, the usage fields it sends, and reasoning
text in the content. The bodies are modelled on what each server returns (from their source and
issue trackers); the real servers are not run by the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TOKENS_REFUSAL", "PROFILES", "Profile", "openai_error", "refusal_body", "request_mode", "usage_body", "with_think"]

ErrorBody = Callable[[int, str], Any]  # (status, message) -> a JSON value, or a str sent as text/plain
_OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                 429: "rate_limit_exceeded", 503: "service_unavailable"}


def openai_error(status: int, message: str) -> dict[str, Any]:
    """The OpenAI API's error body: ``{"error": {"message", "type", "code"}}``."""
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": kind}}


def _llama_cpp_python_error(status: int, message: str) -> dict[str, Any]:
    # llama_cpp/server/errors.py: every exception (a request validation error too) becomes a 500 of this shape
    return {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}


def _llama_server_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "type": "server_error" if status >= 500 else
                      "invalid_request_error"}}


def _ollama_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "api_error" if status >= 500 else "invalid_request_error",
                      "param": None, "code": None}}


def _vllm_error(status: int, message: str) -> dict[str, Any]:
    # vLLM's ErrorResponse before 0.10: the fields at the top level, no "error" wrapper
    return {"object": "error", "message": message, "type": "BadRequestError" if status < 500 else
            "InternalServerError", "param": None, "code": status}


def _lmstudio_error(status: int, message: str) -> dict[str, Any]:
    return {"error": message}  # a plain string


def _litellm_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": f"litellm.APIError: {message}", "type": None, "param": None, "code": str(status)}}


def _fastapi_error(status: int, message: str) -> dict[str, Any]:
    return {"detail": message}


def _text_error(status: int, message: str) -> str:
    return f"{status} {message}"  # a proxy's text/plain page


@dataclass(frozen=True)
class Profile:
    """How one kind of server answers.

    Attributes:
        refuses: the structured-output modes answered with ``refusal`` instead of a reply, by
            :func:`request_mode`: ``json_schema``, ``json_object+schema``, ``json_object``.
        refusal_status: the HTTP status of a refusal.
        refusal: the refusal's message (put into ``error`` to make the body).
        error: builds the body of any error (a refusal, or a scripted non-200 ``ChatReply``).
        usage: ``details`` (OpenAI: cached and reasoning token details), ``plain`` (prompt,
            completion and total only), ``null-details`` (the details present as null), ``none``
            (no usage field at all).
        think: ``tagged`` puts a ``<think>...</think>`` block (with braces in it) before the
            content; ``unopened`` puts reasoning and a closing ``</think>`` only (templates that
            open the block in the prompt); None leaves the content as scripted.
        refuses_max_tokens: a request carrying ``max_tokens`` is answered with OpenAI's HTTP 400
            for reasoning models, which names ``max_completion_tokens``.
    """

    refuses: frozenset[str] = frozenset()
    refusal_status: int = 400
    refusal: str = ""
    error: ErrorBody = openai_error
    usage: str = "details"
    think: str | None = None
    refuses_max_tokens: bool = False


MAX_TOKENS_REFUSAL = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                      "Use 'max_completion_tokens' instead.")

_STRUCTURED = frozenset({"json_schema", "json_object+schema", "json_object"})

PROFILES: dict[str, Profile] = {
    # The hosted OpenAI API: every mode, usage with cached and reasoning token details.
    "openai": Profile(),
    # llama-cpp-python 0.3.x: response_format.type is text or json_object (with an optional schema);
    # json_schema fails FastAPI validation, which its route handler reports as HTTP 500.
    "llama-cpp-python": Profile(
        refuses=frozenset({"json_schema"}), refusal_status=500,
        refusal="1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}",
        error=_llama_cpp_python_error, usage="plain",
    ),
    # llama.cpp's llama-server before json_schema support (2024): HTTP 500 with its own error shape.
    "llama-server-2024": Profile(
        refuses=frozenset({"json_schema"}), refusal_status=500,
        refusal='response_format type must be one of "text" or "json_object", but got: json_schema',
        error=_llama_server_error, usage="plain",
    ),
    # Ollama's /v1: takes every response_format; usage without details.
    "ollama": Profile(error=_ollama_error, usage="plain"),
    # vLLM before json_schema (0.5): a 400 in its top-level ErrorResponse; details sent as null.
    "vllm": Profile(
        refuses=frozenset({"json_schema"}), refusal_status=400,
        refusal="[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                "'msg': \"Input should be 'text' or 'json_object'\"}]",
        error=_vllm_error, usage="null-details",
    ),
    # LM Studio: json_schema only; json_object is refused with a plain-string error.
    "lmstudio": Profile(
        refuses=frozenset({"json_object+schema", "json_object"}), refusal_status=400,
        refusal="'response_format.type' must be 'json_schema' or 'text'", error=_lmstudio_error, usage="plain",
    ),
    # A LiteLLM proxy before a backend that takes no response_format (and drop_params off).
    "litellm": Profile(
        refuses=_STRUCTURED, refusal_status=400,
        refusal="litellm.UnsupportedParamsError: backend does not support parameters: ['response_format']. "
                "To drop these, set `litellm.drop_params=True`",
        error=_litellm_error,
    ),
    # A FastAPI server whose request model forbids response_format: 422 with a detail list.
    "text-only": Profile(refuses=_STRUCTURED, refusal_status=422, error=_fastapi_error, usage="plain"),
    # A proxy that refuses json_schema with a text/plain body.
    "plain-text-errors": Profile(
        refuses=frozenset({"json_schema"}), refusal_status=400, refusal="Bad Request: unsupported response_format",
        error=_text_error,
    ),
    # Reasoning models (DeepSeek-R1, Qwen3) served with their reasoning in the content.
    "think-blocks": Profile(think="tagged"),
    # OpenAI's reasoning models (o1, o3, ...): max_tokens refused with HTTP 400, max_completion_tokens taken.
    "openai-reasoning": Profile(refuses_max_tokens=True),
    "think-unopened": Profile(think="unopened"),
    # Servers that send no usage, or the details as null.
    "no-usage": Profile(usage="none"),
    "null-details": Profile(usage="null-details"),
}


def request_mode(body: dict[str, Any]) -> str:
    """The structured-output mode a chat request asks for (``text`` without a ``response_format``)."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return "text"
    if fmt.get("type") == "json_object":
        return "json_object+schema" if "schema" in fmt else "json_object"
    return str(fmt.get("type"))


def refusal_body(profile: Profile, body: dict[str, Any]) -> Any:
    """The body a ``profile`` refuses ``body``'s response_format with (FastAPI's detail list for ``text-only``)."""
    if profile.error is _fastapi_error:
        return {"detail": [{"type": "extra_forbidden", "loc": ["body", "response_format"],
                            "msg": "Extra inputs are not permitted", "input": body.get("response_format")}]}
    return profile.error(profile.refusal_status, profile.refusal)


def with_think(profile: Profile, content: str) -> str:
    """``content`` as a reasoning model of ``profile`` sends it."""
    if profile.think == "tagged":
        return f"<think>The user wants JSON like {{\"queries\": []}}; check the memories first.</think>\n{content}"
    if profile.think == "unopened":
        return f"Okay, the reply needs {{braces}} and an object.\n</think>\n\n{content}"
    return content


def usage_body(profile: Profile, prompt: int, completion: int, cached: int, reasoning: int) -> dict[str, Any] | None:
    """The ``usage`` field of a reply under ``profile`` (None: leave it out)."""
    if profile.usage == "none":
        return None
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
    if profile.usage == "details":
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    elif profile.usage == "null-details":
        usage["prompt_tokens_details"] = None
        usage["completion_tokens_details"] = None
    return usage
