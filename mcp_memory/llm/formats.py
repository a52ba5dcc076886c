"""Structured output across OpenAI-compatible servers: the modes, refusals, and JSON out of a reply.

Servers differ in what ``response_format`` they take. The hosted OpenAI API, vLLM, Ollama, LM Studio
and recent llama.cpp take ``json_schema``; llama-cpp-python's server takes only ``text`` and
``json_object`` (optionally with a ``schema``) and answers ``json_schema`` with HTTP 500; LM Studio
refuses ``json_object``; a LiteLLM proxy in front of a backend without JSON mode refuses any
``response_format`` with HTTP 400. So a request is sent in the first of the modes of ``LADDER`` it
may use; one the server refuses (:func:`refuses_format`) is sent again once in the next mode down.
``text`` sends no ``response_format``: the prompts themselves ask for JSON, and
:func:`parse_json_object` takes the object out of whatever came back.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

__all__ = ["LADDER", "Mode", "error_text", "next_mode", "parse_json_object", "refuses_format",
           "response_format", "start_mode", "strip_think"]

Mode = Literal["json_schema", "json_object+schema", "json_object", "text"]
LADDER: tuple[Mode, ...] = ("json_schema", "json_object+schema", "json_object", "text")

# Statuses a server refuses a request's shape with: 400 (OpenAI, LM Studio, LiteLLM, vLLM), 422 (FastAPI
# validation), 500 (llama-cpp-python and older llama.cpp wrap the validation error as a server error).
_REFUSAL_STATUSES = frozenset({400, 422, 500})
_FORMAT_WORDS = ("response_format", "response format", "json_schema", "json schema", "json_object", "json mode",
                 "structured output")
_OPEN_THINK = re.compile(r"<think>", re.IGNORECASE)
_CLOSE_THINK = re.compile(r"</think>", re.IGNORECASE)
_ERROR_CHARS = 300


def start_mode(structured_output: str, json_schema_output: bool) -> Mode:
    """The mode a new endpoint is asked in first.

    Args:
        structured_output: ``llm.structured_output``: ``auto``, ``json_schema``, ``json_object`` or ``text``.
        json_schema_output: ``llm.json_schema_output``; under ``auto``, false starts below ``json_schema``.
    """
    if structured_output == "auto":
        return "json_schema" if json_schema_output else "json_object+schema"
    if structured_output == "json_object":
        return "json_object+schema"
    return "text" if structured_output == "text" else "json_schema"


def next_mode(mode: Mode) -> Mode | None:
    """The mode below ``mode``; None below ``text``."""
    index = LADDER.index(mode)
    return LADDER[index + 1] if index + 1 < len(LADDER) else None


def response_format(mode: Mode, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` request field of ``mode`` (None: leave the field out)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    if mode == "json_object+schema":
        return {"type": "json_object", "schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def error_text(body: Any) -> str:
    """One line (at most 300 characters) of what an error body says, whatever its shape.

    Shapes: OpenAI ``{"error": {"message": ..}}``, LM Studio ``{"error": ".."}``, vLLM before 0.6
    ``{"object": "error", "message": ..}``, FastAPI ``{"detail": ".."}`` or ``{"detail": [{"loc", "msg"}]}``,
    or a body that is not JSON at all (a proxy's text or HTML). Inputs echoed in a FastAPI detail
    are left out (they can hold the request's text).
    """
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            parts = [error.get("message"), error.get("param")]
        elif error is not None:
            parts = [error]
        elif "detail" in body:
            detail = body["detail"]
            items = detail if isinstance(detail, list) else [detail]
            parts = [
                (".".join(map(str, item.get("loc", ()))) + ": " + str(item.get("msg", ""))) if isinstance(item, dict)
                else item
                for item in items
            ]
        else:
            parts = [body.get("message")]
        text = "; ".join(str(part) for part in parts if part not in (None, ""))
    else:
        text = "" if body is None else str(body)
    return " ".join(text.split())[:_ERROR_CHARS]


def refuses_format(status: int, body: Any) -> bool:
    """Whether an error answer refuses the request's ``response_format`` (rather than failing).

    True for HTTP 400, 422 or 500 whose message (:func:`error_text`) names the response format
    (``response_format``, ``json_schema``, ``json_object``, ``json mode``, ``structured output``).
    A bare 500 says nothing about the format and stays an endpoint failure.
    """
    if status not in _REFUSAL_STATUSES:
        return False
    text = error_text(body).lower()
    return any(word in text for word in _FORMAT_WORDS)


def strip_think(text: str) -> str:
    """``text`` without reasoning: ``<think>...</think>`` blocks, anything before an unopened
    ``</think>`` (templates that open the block in the prompt), and an unclosed ``<think>`` to the end;
    in one pass (linear in the reply's length, however many tags it holds)."""
    kept: list[str] = []
    position = 0
    while (opened := _OPEN_THINK.search(text, position)) and (closed := _CLOSE_THINK.search(text, opened.end())):
        kept.append(text[position:opened.start()])  # each block to the first close after it, in one pass
        position = closed.end()
    text = "".join(kept) + text[position:]
    last_close = None
    for last_close in _CLOSE_THINK.finditer(text):
        pass
    if last_close is not None:
        text = text[last_close.end():]
    if (opened := _OPEN_THINK.search(text)) is not None:
        text = text[:opened.start()]
    return text.strip()


def parse_json_object(text: str, required: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The first JSON object in a reply, after :func:`strip_think`; code fences and prose around it
    are ignored. Of several objects, the first that has every ``required`` key wins.

    Raises:
        ValueError: the reply holds no JSON object.
    """
    cleaned = strip_think(text)
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = cleaned.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(cleaned, position)
        except (json.JSONDecodeError, RecursionError):  # nested past the decoder's limit: not an object here
            position = cleaned.find("{", position + 1)
            continue
        if isinstance(value, dict):
            if all(key in value for key in required):
                return value
            found.append(value)
        position = cleaned.find("{", end)
    if found:
        return found[0]
    raise ValueError("no JSON object in the reply")
