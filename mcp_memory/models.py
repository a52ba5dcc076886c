"""Value types that cross stage boundaries and the tools' structured results.

Tool results are pydantic models so that MCP clients receive structured content as well as
text. Internal stage types are frozen dataclasses-like models; none is an asyncpg Record.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AuditEntry",
    "AuditList",
    "Candidate",
    "DeleteResult",
    "NewMemory",
    "OperationUsage",
    "Plan",
    "RecallFilter",
    "RecallResult",
    "RecalledMemory",
    "Redaction",
    "StoreResult",
    "TimeWindow",
    "UsageStats",
]


class Redaction(BaseModel):
    """A secret taken out of a memory before it was stored: its kind and where it was, never its value."""

    model_config = ConfigDict(frozen=True)

    field: str = Field(description="Where it was: content, or metadata.<path> for a metadata string.")
    kind: str = Field(description="What it was, e.g. aws-access-key, github-token, private-key, url-password.")
    start: int = Field(description="Its first character in the field as sent (0-based, in characters).")
    end: int = Field(description="One past its last character in the field as sent.")


class NewMemory(BaseModel):
    """A validated memory on its way to the repository."""

    model_config = ConfigDict(frozen=True)

    session: str
    content: str
    occurred_at: datetime  # always timezone-aware (UTC when the caller gave no zone)
    metadata: dict[str, Any]
    importance: float | None
    content_hash: bytes  # sha256 of the UTF-8 content, exactly as given
    supersedes: tuple[str, ...] = ()  # canonical memory_ids this memory replaces, each once
    idempotency_key: str | None = None  # the caller's key for retries of this store (1..128 characters)
    request_hash: bytes = b""  # sha256 of every argument as given: a retry must repeat them
    redactions: tuple[Redaction, ...] = ()  # secrets taken out of content and metadata (privacy.secrets)


class StoreResult(BaseModel):
    """What store_memory returns."""

    memory_id: str = Field(description="Id of the stored memory (a UUID); pass it to delete_memory.")
    session: str
    occurred_at: str = Field(description="When it happened, ISO 8601 with an explicit UTC offset.")
    deduplicated: bool = Field(description="True when the same content was already stored in this session.")
    replayed: bool = Field(
        False,
        description="True when this call repeated an earlier store_memory with the same idempotency_key: its "
        "memory_id is the first call's and nothing new was stored (deduplicated is true as well).",
    )
    superseded: list[str] = Field(
        default_factory=list,
        description="Ids this call marked superseded by this memory (the supersedes given, plus any the LLM found).",
    )
    redactions: list[Redaction] = Field(
        default_factory=list,
        description="Secrets (API keys, tokens, passwords, private keys) replaced by [redacted: <kind>] before the "
        "memory was stored; the stored text holds the marker, never the secret.",
    )


class RecalledMemory(BaseModel):
    """One memory in a recall result."""

    memory_id: str
    content: str = Field(description="The memory exactly as stored.")
    occurred_at: str = Field(description="ISO 8601 with an explicit UTC offset.")
    score: float = Field(description="Fused relevance score; higher is better, comparable within one recall only.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    superseded_by: str | None = Field(
        None, description="The memory_id of the newer memory that replaced this one; null when it is current."
    )


class RecallFilter(BaseModel):
    """The filters a recall applied: occurred_at within [since, until] (null: open at that end), and
    metadata holding every key given with exactly that value."""

    # Built by pipeline.filters.check_filter; every candidate list, the neighbours, the supersession
    # reads and the final fetch take it (db/filters.py turns it into SQL).
    model_config = ConfigDict(frozen=True)

    since: datetime | None = Field(None, description="Earliest occurred_at returned (inclusive), in UTC.")
    until: datetime | None = Field(
        None, description="Latest occurred_at returned (inclusive), in UTC; a date given is the end of that day."
    )
    metadata: dict[str, Any] | None = Field(
        None, description="Keys every returned memory's metadata holds with exactly these values; null when not given."
    )

    @property
    def empty(self) -> bool:
        """True when nothing is filtered."""
        return self.since is None and self.until is None and not self.metadata


class RecallResult(BaseModel):
    """What recall_memory returns."""

    answer: str | None = Field(
        description="Answer written from the cited memories, the fixed refusal, or null when no answer model is set."
    )
    memories: list[RecalledMemory] = Field(
        description="With an answer: the memories it cites. Without: the top_k memories, best first."
    )
    answerable: bool | None = Field(None, description="The answer model's verdict; null without one.")
    truncated: bool = Field(False, description="True when lower-ranked memories were left out to bound the size.")
    omitted_memory_ids: list[str] = Field(default_factory=list, description="Ids left out when truncated.")
    filters: RecallFilter | None = Field(
        None, description="The since/until/metadata filters as applied (times in UTC); null when none was given."
    )


class DeleteResult(BaseModel):
    """What delete_memory returns."""

    deleted: bool = Field(description="True when at least one memory was deleted by this call.")
    count: int = Field(description="Number of memories deleted.")


class AuditEntry(BaseModel):
    """One audit row: a recall, a delete or a supersession decision."""

    audit_id: int
    session: str
    kind: str = Field(description="recall | delete | delete_session | supersede | redact")
    created_at: str
    detail: dict[str, Any]


class AuditList(BaseModel):
    """What list_audits returns, newest first."""

    audits: list[AuditEntry]
    truncated: bool = False


class OperationUsage(BaseModel):
    """LLM token use of one operation (plan, answer, supersede)."""

    operation: str
    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    uncached_prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cache_hit_rate: float = Field(0.0, description="cached_prompt_tokens / prompt_tokens; 0 when no prompt tokens.")


class UsageStats(BaseModel):
    """What usage_stats returns: totals over the sessions the caller may see."""

    operations: list[OperationUsage]


class TimeWindow(BaseModel):
    """A closed time interval named by the question, from the planner."""

    start: datetime
    end: datetime


class Plan(BaseModel):
    """The retrieval queries for one recall; the original query is always first."""

    queries: list[str]
    time_window: TimeWindow | None = None
    time_window_source: Literal["llm", "expression"] | None = Field(
        None, description="Who named the window: the LLM planner, or a time expression read from the question."
    )
    notes: list[str] = Field(default_factory=list, description="Why the plan fell back or dropped a part.")
    mode: str | None = Field(None, description="The structured-output mode the planner answered in.")
    fallbacks: list[str] = Field(default_factory=list, description="Output modes the endpoint refused on the way.")


class Candidate(BaseModel):
    """A memory found by at least one search list, before fusion picks the final order."""

    memory_id: str
    content: str
    occurred_at: datetime
    metadata: dict[str, Any]
    importance: float | None = None
    score: float = 0.0
    ranks: dict[str, int] = Field(default_factory=dict, description="1-based rank in each list that found it.")
    superseded_by: str | None = None  # the newer memory that replaced this one; None when current
    superseded_at: datetime | None = None  # when it was marked
    superseded_others: bool = False  # True when this memory replaced at least one other


RecallStage = Literal["plan", "embed", "search", "fuse", "supersede", "answer", "audit"]
