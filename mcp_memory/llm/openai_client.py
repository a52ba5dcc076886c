"""The openai SDK's client as :class:`~mcp_memory.llm.client.LlmClient` uses it.

A module of its own so that ``openai`` is imported only when ``llm.base_url`` is set: importing it
takes about 0.6 s of CPU (2-core machine), which every command and every server without an LLM
would otherwise pay at start.
"""

from __future__ import annotations

from typing import Any

import openai

from mcp_memory.llm.formats import refuses_format

__all__ = ["OpenAIClient"]


class OpenAIClient(openai.AsyncOpenAI):
    """The openai client, except that a request refused for its ``response_format`` is not retried
    as it is (llama-cpp-python refuses ``json_schema`` with HTTP 500, which the client would retry
    ``max_retries`` times with backoff): :class:`~mcp_memory.llm.client.LlmClient` retries it in the
    next mode down."""

    def _should_retry(self, response: Any) -> bool:
        return not _refuses(response) and super()._should_retry(response)


def _refuses(response: Any) -> bool:
    """Whether an error response refuses the ``response_format`` its request carried."""
    try:
        if b'"response_format"' not in response.request.content:
            return False
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        return refuses_format(response.status_code, body)
    except Exception:  # noqa: BLE001 - an unread or streamed body: let the client decide as it would
        return False
