"""The five MCP tools: thin adapters over the pipeline, and their annotations.

Each tool's signature is its input schema (limits shown with ``maxLength``/``minimum``/...,
checked by ``validate`` so errors name the field, the limit and the value); its return model is
the structured output. The descriptions are prompts for the agent. ``server.build_server`` wraps
each with ``arguments.checked_tool`` and ``ANNOTATIONS``.
"""

# No `from __future__ import annotations`: tool signatures use local names the SDK must evaluate.

from collections.abc import Callable
from typing import Annotated, Any

from mcp_types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from mcp_memory.access.gate import Gate
from mcp_memory.deps import Deps
from mcp_memory.errors import InvalidInput
from mcp_memory.models import AuditList, DeleteResult, RecallResult, StoreResult, UsageStats
from mcp_memory.pipeline.audit import AUDIT_KINDS
from mcp_memory.pipeline.audit import list_audits as read_audits
from mcp_memory.pipeline.audit import record
from mcp_memory.pipeline.filters import check_filter
from mcp_memory.pipeline.recall import recall
from mcp_memory.pipeline.store import store
from mcp_memory.pipeline.usage import usage_stats as read_usage
from mcp_memory.pipeline.validate import check_memory_id, check_session
from mcp_memory.settings import Settings

__all__ = ["ANNOTATIONS", "build_tools"]


def build_tools(settings: Settings, deps: Deps, gate: Gate) -> list[Callable[..., Any]]:
    """The tools for one server, each a closure over ``settings``' limits, ``deps`` and ``gate``
    (who may use which session): store_memory, recall_memory, delete_memory, list_audits, usage_stats."""
    limits = settings.limits
    Session = Annotated[
        str,
        Field(
            description="Whose memories: a user, project, task or agent name. Exact string; case matters.",
            json_schema_extra={"minLength": 1, "maxLength": limits.max_session_chars},
        ),
    ]

    async def store_memory(
        session: Session,
        content: Annotated[
            str,
            Field(
                description="The memory, verbatim: a fact, event, decision or preference. Stored unchanged.",
                json_schema_extra={"minLength": 1, "maxLength": limits.max_content_chars},
            ),
        ],
        occurred_at: Annotated[
            str | None,
            Field(description="When it happened, ISO 8601 (2025-03-14T09:30:00+01:00 or 2025-03-14); "
                  "no zone means UTC; omitted means now."),
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description=f"Optional JSON object kept with the memory (at most {limits.max_metadata_bytes} bytes)."),
        ] = None,
        importance: Annotated[
            float | None,
            Field(description="Optional importance from 0 (trivial) to 1 (critical).",
                  json_schema_extra={"minimum": 0, "maximum": 1}),
        ] = None,
        supersedes: Annotated[
            list[str] | None,
            Field(description="memory_ids of older memories in this session that this one replaces (a fact that "
                  "changed: a new address, a moved date). They stay, marked superseded, and recall then prefers this "
                  f"one. At most {limits.max_supersedes}.", json_schema_extra={"maxItems": limits.max_supersedes}),
        ] = None,
        idempotency_key: Annotated[
            str | None,
            Field(description="Optional key for safe retries: a fresh random string (a UUID) per memory. Retrying "
                  "with the same key and the same arguments returns the first call's memory_id (replayed=true) and "
                  "stores nothing new, also when the first reply was lost.",
                  json_schema_extra={"minLength": 1, "maxLength": 128}),
        ] = None,
    ) -> StoreResult:
        """Save a memory in a session for later recall.

        Store the raw text of what happened or was said, not a summary. Storing the same content twice in a
        session returns the first memory_id with deduplicated=true. When the memory updates or contradicts
        older ones (Alice moved from Berlin to Lisbon), name them in supersedes: they are kept as history
        and marked superseded; `superseded` lists what this call marked (marking needs the delete right). When a
        store may have to be retried (a timeout, a lost connection), pass an idempotency_key and repeat it on the
        retry.
        """
        caller = gate.admit(session, supersede=bool(supersedes))
        ready = await deps.ready()
        return await store(ready, session, content, occurred_at, metadata, importance, supersedes, idempotency_key,
                           by=caller.name, may_supersede=caller.can_delete)

    async def recall_memory(
        session: Session,
        query: Annotated[
            str,
            Field(description="A natural-language question or keywords (names, ids, file names work too).",
                  json_schema_extra={"minLength": 1, "maxLength": limits.max_query_chars}),
        ],
        top_k: Annotated[
            int,
            Field(description="How many memories to return, best first.",
                  json_schema_extra={"minimum": 1, "maximum": limits.max_top_k}),
        ] = limits.default_top_k,
        include_superseded: Annotated[
            bool,
            Field(description="Also return memories that newer ones superseded (history), each below its "
                  "successor. Without it a superseded memory appears only for questions about the past, or right "
                  "below its successor when only its own wording matched the question."),
        ] = False,
        since: Annotated[
            str | None,
            Field(description="Only memories that occurred at or after this time: RFC 3339 with an offset "
                  "(2024-03-01T09:30:00Z, 2024-03-01T10:30:00+01:00) or a date (2024-03-01, from the start of that "
                  "UTC day)."),
        ] = None,
        until: Annotated[
            str | None,
            Field(description="Only memories that occurred at or before this time: RFC 3339 with an offset, or a "
                  "date, which means through the end of that UTC day (until=2024-03-31 keeps all of March 31)."),
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            WithJsonSchema({"anyOf": [{"type": "object", "additionalProperties": {
                "type": ["string", "number", "boolean", "null"]}}, {"type": "null"}]}),
            Field(description="Only memories whose metadata has every one of these keys with exactly this value "
                  '(e.g. {"project": "apollo", "kind": "decision"}); values are strings, numbers, booleans or null.'),
        ] = None,
        as_of: Annotated[
            str | None,
            Field(description="When the question is asked, ISO 8601 (2025-03-14T09:30:00+01:00 or 2025-03-14); no "
                  "zone means UTC; omitted means now. Words such as yesterday or last week count back from it."),
        ] = None,
    ) -> RecallResult:
        """Find the memories of a session that answer a question.

        Returns the best-matching memories with their memory_id, content and occurred_at. Current memories rank
        above the ones they superseded; a superseded memory carries superseded_by (the newer memory's id). When
        the server has an answer model, `answer` holds an answer written only from the returned (cited) memories,
        or a fixed refusal when they do not support one; otherwise `answer` is null. since, until and metadata
        narrow the search itself: no memory outside them is returned, and `filters` echoes them as applied.
        """
        gate.admit(session)
        given = since is not None or until is not None or metadata is not None
        filters = check_filter(since, until, metadata, limits) if given else None
        ready = await deps.ready()
        return await recall(ready, session, query, top_k, include_superseded, filters, as_of)

    async def delete_memory(
        session: Session,
        memory_id: Annotated[str | None, Field(description="The memory to delete, as returned by store_memory.")] = None,
        all: Annotated[bool, Field(description="Delete every memory of the session (needs confirm).")] = False,
        confirm: Annotated[
            str | None, Field(description="With all=true: the session name typed again, to confirm.")
        ] = None,
    ) -> DeleteResult:
        """Delete one memory, or with all=true and confirm=<session> every memory of the session.

        Deleted memories are never recalled again. Every delete is audited in the session.
        """
        caller = gate.admit(session, delete=True)
        ready = await deps.ready()
        check_session(session, limits)
        if all and memory_id is not None:  # one memory was meant, or all: never guess which
            raise InvalidInput("memory_id", "give memory_id or all=true, not both; nothing was deleted")
        if all:
            if confirm != session:
                raise InvalidInput("confirm", "deleting a whole session needs confirm equal to the session name")
            count = await ready.repository.delete_session(session)
            await record(ready.repository, session, "delete_session", {"count": count, "by": caller.name})
            return DeleteResult(deleted=count > 0, count=count)
        if memory_id is None:
            raise InvalidInput("memory_id", "is required unless all=true")
        canonical = check_memory_id(memory_id)
        deleted, current_again, superseded_now_by = await ready.repository.delete(session, canonical)
        detail: dict[str, Any] = {"memory_id": canonical, "deleted": deleted, "by": caller.name}
        if current_again:  # the memories it had superseded
            detail["current_again"] = current_again
        if superseded_now_by:  # ... or, when it was superseded itself, now superseded by its successor
            detail["superseded_now_by"] = superseded_now_by
        await record(ready.repository, session, "delete", detail)
        return DeleteResult(deleted=deleted, count=int(deleted))

    async def list_audits(
        session: Session,
        limit: Annotated[int, Field(description="Rows to return.", json_schema_extra={"minimum": 1, "maximum": 100})]
        = 20,
        kind: Annotated[
            str | None,
            Field(description="Only rows of this kind: recall, delete, delete_session, supersede, redact."),
        ] = None,
    ) -> AuditList:
        """List a session's audit trail, newest first: recalls (query, candidates, answer, timings), deletes and
        the LLM's supersession decisions on store."""
        gate.admit(session)
        ready = await deps.ready()
        check_session(session, limits)
        if not 1 <= limit <= 100:
            raise InvalidInput("limit", f"must be in the range 1..100; got {limit}")
        if kind is not None and kind not in AUDIT_KINDS:
            raise InvalidInput("kind", f"must be one of {', '.join(AUDIT_KINDS)}; got {kind!r}")
        return await read_audits(ready.repository, session, limit, kind, limits.max_response_chars)

    async def usage_stats() -> UsageStats:
        """LLM token use by operation (plan, answer, supersede) in the sessions you may use: calls, prompt, cached,
        uncached, completion and reasoning tokens, cache-hit rate, errors. Empty until an LLM is configured and
        used. Read-only; the operator clears the totals with `mcp-memory usage --reset`."""
        caller = gate.admit(None)
        ready = await deps.ready()
        return await read_usage(ready.repository, caller.scope)

    return [store_memory, recall_memory, delete_memory, list_audits, usage_stats]


ANNOTATIONS = {
    "store_memory": ToolAnnotations(title="Store a memory", readOnlyHint=False, destructiveHint=False,
                                    idempotentHint=True, openWorldHint=False),
    "recall_memory": ToolAnnotations(title="Recall memories", readOnlyHint=True, openWorldHint=False),
    "delete_memory": ToolAnnotations(title="Delete memories", readOnlyHint=False, destructiveHint=True,
                                     idempotentHint=True, openWorldHint=False),
    "list_audits": ToolAnnotations(title="List audit rows", readOnlyHint=True, openWorldHint=False),
    "usage_stats": ToolAnnotations(title="LLM usage", readOnlyHint=True, openWorldHint=False),
}
