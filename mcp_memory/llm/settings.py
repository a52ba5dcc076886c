"""The ``[llm]`` settings group: the optional OpenAI-compatible LLM (``mcp_memory.settings`` nests it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_memory.setting_values import SettingsGroup

__all__ = ["LlmSettings"]


class LlmSettings(SettingsGroup):
    """The optional OpenAI-compatible LLM used for query planning and answers."""

    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; unset means no LLM is used.")
    api_key: str | None = None
    plan_model: str | None = Field(None, description="Model that rewrites queries; unset disables planning.")
    answer_model: str | None = Field(None, description="Model that answers from memories; unset disables answers.")
    supersede_model: str | None = Field(
        None, description="Model that decides on store which older memories a new one supersedes; unset disables it."
    )
    timeout_s: float = Field(20.0, gt=0)
    max_retries: int = Field(2, ge=0, description="Retries on 429 and 5xx, with exponential backoff.")
    max_plan_queries: int = Field(4, ge=1, description="Retrieval queries the planner may add.")
    json_schema_output: bool = Field(
        True, description="Under structured_output 'auto': start with a JSON schema; false starts with json_object."
    )
    max_output_tokens: int = Field(
        1024, ge=16, le=65536,
        description="Most tokens one reply may generate, sent as max_tokens (as max_completion_tokens to an endpoint"
        " that refuses max_tokens). A reply cut there is given up without a repair request. Bounds a small model that"
        " loops on whitespace inside a JSON reply, which would otherwise generate until its context is full. A reply"
        " longer than 32 characters per token of it is not read (a broken or hostile endpoint).",
    )
    structured_output: Literal["auto", "json_schema", "json_object", "text"] = Field(
        "auto",
        description="The structured-output mode tried first; a mode the endpoint refuses is retried once in the next"
        " one down (json_schema, json_object with the schema, json_object, text) and the one that answers is kept.",
    )
