"""privacy.secrets end to end: store_memory, recall, audits, export, every importer, the supersession
model's prompt, ``mcp-memory doctor`` and ``mcp-memory redact``. Every secret here is fake (AWS's
documented example key, or a provider prefix with EXAMPLE filler)."""

from __future__ import annotations

import io
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest
from conftest import make_settings
from fake_openai import ChatReply
from processes import MCP_MEMORY, server_env
from tools import call, served, store

from mcp_memory.access.scope import SessionScope
from mcp_memory.privacy.settings import PrivacySettings
from mcp_memory.transfer.export import export
from mcp_memory.transfer.importer import import_file

pytestmark = pytest.mark.anyio

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_EXAMPLE0123456789abcdefghijklmnopqrs"
SAID = f"Deploy notes: the CI user's AWS key is {AWS} and the bot pushes with {GITHUB}."
REDACTED = "Deploy notes: the CI user's AWS key is [redacted: aws-access-key] and the bot pushes with [redacted: github-token]."
RUN_TIMEOUT_S = 120.0


async def _rows(pg_url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(pg_url)
    try:
        return await connection.fetch(sql, *args)
    finally:
        await connection.close()


async def _stored_text(pg_url: str) -> str:
    """Every content, metadata and audit detail in the database, as one string."""
    rows = await _rows(pg_url, "SELECT content || metadata::text AS t FROM memories"
                       " UNION ALL SELECT detail::text FROM audits")
    return "\n".join(row["t"] for row in rows)


async def test_a_secret_is_redacted_before_it_is_stored_and_the_reply_and_audit_say_where(client, deps, pg_url):
    reply = await call(client, "store_memory", {"session": "ops", "content": SAID,
                                                 "metadata": {"note": f"backup key {AWS}"}})
    assert reply["redactions"] == [
        {"field": "content", "kind": "aws-access-key", "start": SAID.index(AWS), "end": SAID.index(AWS) + len(AWS)},
        {"field": "content", "kind": "github-token", "start": SAID.index(GITHUB),
         "end": SAID.index(GITHUB) + len(GITHUB)},
        {"field": "metadata.note", "kind": "aws-access-key", "start": 11, "end": 31},
    ]
    recalled = await call(client, "recall_memory", {"session": "ops", "query": "CI user's AWS key"})
    assert recalled["memories"][0]["content"] == REDACTED
    assert recalled["memories"][0]["metadata"] == {"note": "backup key [redacted: aws-access-key]"}
    audits = await call(client, "list_audits", {"session": "ops", "kind": "redact"})
    assert [a["detail"] for a in audits["audits"]] == [
        {"memory_id": reply["memory_id"], "source": "store", "redactions": reply["redactions"]}]
    stored = await _stored_text(pg_url)
    assert AWS not in stored and GITHUB not in stored and "[redacted: github-token]" in stored
    out = io.StringIO()
    await export(await deps.ready(), SessionScope.parse(["ops"]), out)
    assert AWS not in out.getvalue() and REDACTED in out.getvalue()


async def test_a_recall_query_holding_a_secret_is_audited_redacted(client):
    await store(client, "ops", "The deploy runs at noon.")
    await call(client, "recall_memory", {"session": "ops", "query": f"which service uses {AWS}?"})
    audits = await call(client, "list_audits", {"session": "ops", "kind": "recall"})
    detail = audits["audits"][0]["detail"]
    assert (detail["query"], detail["queries"]) == (
        "which service uses [redacted: aws-access-key]?", ["which service uses [redacted: aws-access-key]?"])


async def test_a_metadata_filter_value_holding_a_secret_is_audited_redacted(client):
    await store(client, "ops", "The deploy runs at noon.")
    await call(client, "recall_memory", {"session": "ops", "query": "deploy", "metadata": {"key": AWS, "n": 2,
                                                                                         GITHUB: True}})
    audits = await call(client, "list_audits", {"session": "ops", "kind": "recall"})
    assert audits["audits"][0]["detail"]["filters"]["metadata"] == {"key": "[redacted: aws-access-key]", "n": 2,
                                                                    "[redacted: github-token]": True}


async def test_no_field_of_a_recall_audit_holds_the_querys_secret(pg_url, work_dir, fake, empty_tables):
    """Found by an attack: the query and planned queries were redacted in the audit row, but the answer
    (a model that repeats the question's key) and the planner's note quoting its unusable time window
    kept the secret in clear."""
    llm = {"base_url": fake.base_url, "api_key": "k", "plan_model": "fake-plan", "answer_model": "fake-answer",
           "timeout_s": 5.0, "max_retries": 0}
    async with served(make_settings(pg_url, work_dir, llm=llm)) as client:
        await store(client, "ops", "The deploy bot owns the CI key.")
        question = f"who used {AWS} yesterday?"
        fake.script_chat(
            ChatReply(content=json.dumps({"queries": [f"owner of {AWS}"], "time_window": {"start": AWS, "end": AWS}})),
            ChatReply(content=json.dumps({"answer": f"The deploy bot uses {AWS}.", "answerable": True,
                                          "memory_ids": ["1"]})),
        )
        answered = await call(client, "recall_memory", {"session": "ops", "query": question})
        assert answered["answer"] == f"The deploy bot uses {AWS}."  # the caller's own reply is not rewritten
        audits = await call(client, "list_audits", {"session": "ops", "kind": "recall"})
        detail = audits["audits"][0]["detail"]
        assert detail["answer"] == "The deploy bot uses [redacted: aws-access-key]."
        assert any("[redacted: aws-access-key]" in note for note in detail["plan_notes"]), detail["plan_notes"]
        assert AWS not in json.dumps(detail)
    assert AWS not in await _stored_text(pg_url)


async def test_the_keyword_index_and_the_vectors_hold_the_redacted_text(client, deps, pg_url):
    await store(client, "ops", SAID)
    lexemes = {row["lexeme"] for row in await _rows(pg_url, "SELECT lexeme FROM memory_terms")}
    assert not any("akia" in lexeme or "ghp" in lexeme for lexeme in lexemes)
    ready = await deps.ready()
    redacted, verbatim = await ready.embedder.embed_batch([REDACTED, SAID])
    [row] = await _rows(pg_url, "SELECT embedding <=> $1::text::vector AS redacted, embedding <=> $2::text::vector"
                        " AS verbatim FROM memories", json.dumps(redacted.tolist()), json.dumps(verbatim.tolist()))
    assert row["redacted"] < 1e-4 < row["verbatim"]


async def test_a_retry_with_the_same_idempotency_key_replays_with_the_same_redactions(client):
    first = await call(client, "store_memory", {"session": "ops", "content": SAID, "idempotency_key": "k-1"})
    again = await call(client, "store_memory", {"session": "ops", "content": SAID, "idempotency_key": "k-1"})
    assert again["replayed"] and again["memory_id"] == first["memory_id"]
    assert again["redactions"] == first["redactions"]


async def test_refuse_stores_nothing_and_names_the_kind_and_the_character(pg_url, work_dir, empty_tables):
    async with served(make_settings(pg_url, work_dir, privacy={"secrets": "refuse"})) as refusing:
        result = await refusing.call_tool("store_memory", {"session": "ops", "content": SAID})
        assert result.is_error
        assert (f'content: holds a secret (aws-access-key) at character {SAID.index(AWS)} and 1 more; '
                'privacy.secrets = "refuse"') in result.content[0].text
        assert AWS not in result.content[0].text
        plain = await call(refusing, "store_memory", {"session": "ops", "content": "No secret here."})
        assert plain["redactions"] == []
    assert [row["content"] for row in await _rows(pg_url, "SELECT content FROM memories")] == ["No secret here."]


async def test_keep_stores_the_secret_verbatim(pg_url, work_dir, empty_tables):
    async with served(make_settings(pg_url, work_dir, privacy={"secrets": "keep"})) as keeping:
        reply = await call(keeping, "store_memory", {"session": "ops", "content": SAID})
    assert reply["redactions"] == []
    assert [row["content"] for row in await _rows(pg_url, "SELECT content FROM memories")] == [SAID]


async def test_the_supersession_model_is_shown_the_redacted_text(pg_url, work_dir, fake, empty_tables):
    llm = {"base_url": fake.base_url, "api_key": "k", "supersede_model": "fake-supersede", "timeout_s": 5.0,
           "max_retries": 0}
    fake.set_chat_handler(lambda body: ChatReply(content=json.dumps({"superseded": [], "reason": "different"})))
    async with served(make_settings(pg_url, work_dir, llm=llm)) as superseding:
        await store(superseding, "ops", "Deploy notes: the CI user's AWS key is rotated every month.")
        await store(superseding, "ops", SAID)
    prompts = json.dumps([request.body for request in fake.chat_requests()])
    assert "[redacted: aws-access-key]" in prompts
    assert AWS not in prompts and GITHUB not in prompts


def _export_file(tmp_path: Path, contents: list[str]) -> Path:
    path = tmp_path / "export.jsonl"
    header = {"format": "mcp-memory", "version": 1}
    lines = [json.dumps(header)] + [json.dumps({
        "memory_id": f"0b6f1c2e-3d4a-4f5b-8c6d-7e8f9a0b1c{index:02d}", "session": "old", "content": content,
        "occurred_at": "2024-06-01T00:00:00+00:00", "metadata": {}}) for index, content in enumerate(contents)]
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_an_imported_export_is_redacted_and_audited(client, deps, pg_url, tmp_path):
    ready = await deps.ready()
    path = _export_file(tmp_path, [SAID, "Nothing to hide here."])
    summary = await import_file(ready, path)
    assert (summary.stored, summary.redacted, summary.rejected) == (2, 1, [])
    stored = await _stored_text(pg_url)
    assert AWS not in stored and REDACTED in stored
    audits = await call(client, "list_audits", {"session": "old", "kind": "redact"})
    assert [(a["detail"]["source"], [r["kind"] for r in a["detail"]["redactions"]]) for a in audits["audits"]] == [
        ("import", ["aws-access-key", "github-token"])]


async def test_under_refuse_an_imported_line_with_a_secret_is_a_bad_line_with_its_number(client, deps, pg_url,
                                                                                        tmp_path):
    ready = await deps.ready()
    refusing = replace(ready, settings=ready.settings.model_copy(update={"privacy": PrivacySettings(secrets="refuse")}))
    summary = await import_file(refusing, _export_file(tmp_path, ["Nothing to hide here.", SAID]))
    assert summary.stored == 1
    assert [(line, reason.split(";")[0]) for line, reason in summary.rejected] == [
        (3, f"content: holds a secret (aws-access-key) at character {SAID.index(AWS)} and 1 more")]
    assert AWS not in await _stored_text(pg_url)


async def test_knowledge_graph_and_mem0_imports_are_redacted(client, deps, pg_url, tmp_path):
    ready = await deps.ready()
    graph = tmp_path / "memory.jsonl"
    graph.write_text(json.dumps({"type": "entity", "name": "CI", "entityType": "system",
                                 "observations": [f"Deploys with AWS key {AWS}"]}) + "\n")
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [{"id": "m-1", "memory": f"Bot token is {GITHUB}", "user_id": "u1",
                                             "created_at": "2024-06-01T00:00:00+00:00"}]}))
    kg = await import_file(ready, graph, session="kg", fmt="mcp-kg")
    from_mem0 = await import_file(ready, mem0, fmt="mem0")
    assert (kg.stored, kg.redacted, from_mem0.stored, from_mem0.redacted) == (1, 1, 1, 1)
    stored = await _stored_text(pg_url)
    assert AWS not in stored and GITHUB not in stored
    assert "[redacted: aws-access-key]" in stored and "[redacted: github-token]" in stored


async def _cli(work_dir: Path, pg_url: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(RUN_TIMEOUT_S):
        result = await anyio.run_process([MCP_MEMORY, *args], check=False,
                                         env=server_env(work_dir, MCP_MEMORY_DATABASE_URL=pg_url))
    assert result.returncode == 0, result.stderr.decode()
    return result


@pytest.mark.backends("single", "citus")  # redact's SQL (db/redaction.py) on the cluster too
async def test_doctor_counts_stored_secrets_and_redact_replaces_them_in_place(pg_url, work_dir, empty_tables):
    long_said = SAID + " " + " ".join(f"Step {i}: check the pipeline log." for i in range(300))
    async with served(make_settings(pg_url, work_dir, privacy={"secrets": "keep"})) as keeping:
        kept = await store(keeping, "ops", long_said)
        await store(keeping, "ops", "Nothing to hide here.")
        await store(keeping, "dev", f"Local .env has password = \"Hx7!EXAMPLE-pass9\" and {AWS}")
        await store(keeping, "dev", "The standup is at 9:30.")
    doctor = json.loads((await _cli(work_dir, pg_url, "doctor", "--json")).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "secrets"]
    assert check["status"] == "warn"
    assert check["detail"].startswith("2 of 4 stored memories hold a detectable secret ('dev': 1, 'ops': 1)")
    assert AWS not in json.dumps(doctor)
    dry = json.loads((await _cli(work_dir, pg_url, "redact", "--session", "ops", "--dry-run")).stdout)
    assert dry == {"scanned": 2, "redacted": 1, "merged": 0, "sessions": {"ops": 1}, "audits": 0, "dry_run": True}
    assert long_said in await _stored_text(pg_url)
    chunks = (await _rows(pg_url, "SELECT count(*) AS n FROM memory_chunks"))[0]["n"]
    done = json.loads((await _cli(work_dir, pg_url, "redact", "--session", "ops")).stdout)
    assert done == {"scanned": 2, "redacted": 1, "merged": 0, "sessions": {"ops": 1}, "audits": 0, "dry_run": False}
    [row] = await _rows(pg_url, "SELECT content FROM memories WHERE memory_id = $1::uuid", kept)
    assert row["content"].startswith(REDACTED)
    assert (await _rows(pg_url, "SELECT count(*) AS n FROM memory_chunks"))[0]["n"] == chunks > 0
    lexemes = {r["lexeme"] for r in await _rows(pg_url, "SELECT lexeme FROM memory_terms WHERE session = 'ops'")}
    assert "pipelin" in lexemes and not any("akia" in lexeme for lexeme in lexemes)
    [audit] = await _rows(pg_url, "SELECT detail FROM audits WHERE session = 'ops' AND kind = 'redact'")
    assert json.loads(audit["detail"])["source"] == "command" and AWS not in audit["detail"]
    async with served(make_settings(pg_url, work_dir)) as reading:
        found = await call(reading, "recall_memory", {"session": "ops", "query": "CI user's AWS key"})
    assert found["memories"][0]["content"].startswith(REDACTED)
    await _cli(work_dir, pg_url, "redact", "--all")
    doctor = json.loads((await _cli(work_dir, pg_url, "doctor", "--json")).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "secrets"]
    assert (check["status"], check["detail"]) == (
        "ok", "none of the 4 stored memories holds a detectable secret (privacy.secrets = 'redact')")


@pytest.mark.backends("single", "citus")  # redact's SQL (db/redaction.py) on the cluster too
async def test_redact_also_replaces_the_secrets_that_audit_rows_kept(pg_url, work_dir, empty_tables):
    """Found by an attack: under keep a recall's audit row holds its query as asked; `redact` rewrote
    the memories only, so after `redact --all` the key was still in the database, in list_audits and
    on the page."""
    async with served(make_settings(pg_url, work_dir, privacy={"secrets": "keep"})) as keeping:
        await store(keeping, "ops", "The deploy runs at noon.")
        await call(keeping, "recall_memory", {"session": "ops", "query": f"does the deploy use {AWS}?"})
        await call(keeping, "recall_memory", {"session": "ops", "query": "deploy", "metadata": {"key": GITHUB}})
    assert AWS in await _stored_text(pg_url)
    dry = json.loads((await _cli(work_dir, pg_url, "redact", "--all", "--dry-run")).stdout)
    assert (dry["redacted"], dry["audits"]) == (0, 2) and AWS in await _stored_text(pg_url)
    done = json.loads((await _cli(work_dir, pg_url, "redact", "--all")).stdout)
    assert (done["redacted"], done["audits"]) == (0, 2)
    stored = await _stored_text(pg_url)
    assert AWS not in stored and GITHUB not in stored
    asked, filtered = [json.loads(row["detail"]) for row in await _rows(
        pg_url, "SELECT detail FROM audits WHERE session = 'ops' AND kind = 'recall' ORDER BY audit_id")]
    assert asked["query"] == "does the deploy use [redacted: aws-access-key]?"
    assert asked["fused"] and all(len(item["memory_id"]) == 36 for item in asked["fused"])
    assert filtered["filters"]["metadata"] == {"key": "[redacted: github-token]"}


@pytest.mark.backends("single", "citus")  # redact's SQL (db/redaction.py) on the cluster too
async def test_redact_merges_two_memories_that_differed_only_in_their_secret(pg_url, work_dir, empty_tables):
    async with served(make_settings(pg_url, work_dir, privacy={"secrets": "keep"})) as keeping:
        await store(keeping, "ops", f"The key is {AWS}.")
        await store(keeping, "ops", "The key is AKIAI44QH8DHBEXAMPLE.")
    done = json.loads((await _cli(work_dir, pg_url, "redact", "--all")).stdout)
    assert (done["redacted"], done["merged"]) == (1, 1)
    assert [row["content"] for row in await _rows(pg_url, "SELECT content FROM memories")] == [
        "The key is [redacted: aws-access-key]."]


@pytest.mark.backends("single", "citus")  # redact's SQL (db/redaction.py) on the cluster too
async def test_a_merge_by_redact_hands_the_merged_memorys_history_and_keys_to_the_memory_it_merged_into(
        pg_url, work_dir, empty_tables):
    """Found by an attack: the merged memory was deleted as delete_memory deletes, so the memory it had
    superseded was current again (Berlin beside Lisbon), and its idempotency key named a memory that no
    longer exists (a retry was told the user had deleted it)."""
    other_token = "ghp_EXAMPLE9876543210zyxwvutsrqponmlkjih"
    async with served(make_settings(pg_url, work_dir, privacy={"secrets": "keep"})) as keeping:
        berlin = await store(keeping, "ops", "Alice lives in Berlin.", occurred_at="2023-01-01")
        kept = await store(keeping, "ops", f"Alice moved to Lisbon; the door bot token is {GITHUB}.",
                           occurred_at="2024-01-01")
        merged = (await call(keeping, "store_memory", {
            "session": "ops", "content": f"Alice moved to Lisbon; the door bot token is {other_token}.",
            "occurred_at": "2024-02-01", "supersedes": [berlin], "idempotency_key": "lisbon-2"}))["memory_id"]
    done = json.loads((await _cli(work_dir, pg_url, "redact", "--all")).stdout)
    assert (done["redacted"], done["merged"]) == (1, 1)
    links = await _rows(pg_url, "SELECT memory_id::text AS m, superseded_by::text AS s FROM memory_supersessions")
    assert [(row["m"], row["s"]) for row in links] == [(berlin, kept)]
    keys = await _rows(pg_url, "SELECT memory_id::text AS m, content_hash AS h FROM idempotency_keys")
    [held] = await _rows(pg_url, "SELECT content_hash AS h FROM memories WHERE memory_id = $1::uuid", kept)
    assert [(row["m"], row["h"]) for row in keys] == [(kept, held["h"])]
    assert merged not in {row["m"] for row in await _rows(pg_url, "SELECT memory_id::text AS m FROM memories")}


@pytest.mark.backends("single", "citus")  # redact's SQL (db/redaction.py) on the cluster too
async def test_redact_of_a_memory_deleted_meanwhile_rewrites_nothing(deps, empty_tables):
    """Found by an attack: a memory deleted between redact's read and its rewrite (a delete_memory during
    the run) made the rewrite insert index rows for a memory that no longer exists: a foreign-key error
    ended the command with a traceback. It is now skipped."""
    ready = await deps.ready()
    vectors = await ready.embedder.embed_batch(["The key is [redacted: aws-access-key]."])
    gone = "00000000-0000-4000-8000-0000000000bb"
    assert await ready.repository.replace_text("ops", gone, "The key is [redacted: aws-access-key].", b"\0" * 32, {},
                                               vectors) == (False, None)
