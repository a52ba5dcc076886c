"""mcp-memory export and import, run as a user runs them (the installed command, a real database)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from processes import MCP_MEMORY, fresh_db, server_env  # noqa: F401 - fresh_db is a fixture
from conftest import make_settings
from tools import call, served, store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

RUN_TIMEOUT_S = 120.0


async def _run(work_dir: Path, url: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``mcp-memory ARGS`` against the database ``url``; fails the test on a non-zero exit."""
    with anyio.fail_after(RUN_TIMEOUT_S):
        result = await anyio.run_process(
            [MCP_MEMORY, *args], env=server_env(work_dir, MCP_MEMORY_DATABASE_URL=url), check=False
        )
    assert result.returncode == 0, result.stderr.decode()
    return result


def _lines(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *memories = (json.loads(line) for line in path.read_text().splitlines())
    return header, memories


async def _store_sample(client) -> dict[str, str]:
    """Memories in three sessions, with every field a memory can have; returns their ids by name."""
    ids = {
        "old": await store(client, "team:a", "The office is in Lyon.", occurred_at="2024-01-05T09:00:00+01:00",
                           metadata={"source": "chat", "n": 1}, importance=0.25),
        "other": await store(client, "other", "Not a team memory.", occurred_at="2024-01-01"),
        "b": await store(client, "team:b", "Bob likes tea.", occurred_at="2024-02-01"),
    }
    ids["new"] = await store(client, "team:a", "The office moved to Paris.", occurred_at="2024-06-01",
                             supersedes=[ids["old"]], idempotency_key="move-1")
    return ids


async def test_export_writes_a_header_and_every_field_of_each_memory_in_storage_order(
        client, pg_url, work_dir, tmp_path):
    ids = await _store_sample(client)
    out = tmp_path / "team.jsonl"
    await _run(work_dir, pg_url, "export", "--sessions-like", "team:*", "-o", str(out))
    header, memories = _lines(out)
    assert {k: header[k] for k in ("format", "version", "embedding_model", "embedding_dim", "sessions")} == {
        "format": "mcp-memory", "version": 1, "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
        "embedding_dim": 384, "sessions": ["team:*"]}
    assert [(m["session"], m["memory_id"]) for m in memories] == [
        ("team:a", ids["old"]), ("team:a", ids["new"]), ("team:b", ids["b"])]
    old, new, _ = memories
    assert old["content"] == "The office is in Lyon."
    assert old["occurred_at"] == "2024-01-05T08:00:00+00:00"
    assert old["metadata"] == {"source": "chat", "n": 1}
    assert old["importance"] == 0.25
    assert (old["superseded_by"], old["superseded_source"]) == (ids["new"], "explicit")
    assert new["superseded_by"] is None and new["importance"] is None
    assert [key["key"] for key in new["idempotency_keys"]] == ["move-1"]
    assert new["idempotency_keys"][0]["superseded"] == [ids["old"]]
    assert old["idempotency_keys"] == []
    assert old["created_at"] <= new["created_at"]


async def test_export_of_one_session_holds_only_that_session(client, pg_url, work_dir):
    ids = await _store_sample(client)
    result = await _run(work_dir, pg_url, "export", "--session", "team:b")
    header, *memories = (json.loads(line) for line in result.stdout.decode().splitlines())
    assert header["sessions"] == ["team:b"]
    assert [m["memory_id"] for m in memories] == [ids["b"]]


async def test_an_export_that_matches_no_memory_says_so_on_stderr(client, pg_url, work_dir):
    """A misspelt --session wrote the header alone and exited 0 without a word."""
    await store(client, "team:b", "Bob likes tea.")
    result = await _run(work_dir, pg_url, "export", "--session", "team:bb")
    assert [json.loads(line)["format"] for line in result.stdout.decode().splitlines()] == ["mcp-memory"]
    assert "mcp-memory: no memories in team:bb; the export holds its header only" in result.stderr.decode()
    assert "no memories" not in (await _run(work_dir, pg_url, "export", "--session", "team:b")).stderr.decode()


def _summary(result: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    return json.loads(result.stdout)


def _without_export_time(header: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in header.items() if k != "exported_at"}


async def test_export_import_into_an_empty_database_and_export_again_gives_the_same_memories(
        client, pg_url, fresh_db, work_dir, tmp_path):
    ids = await _store_sample(client)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    await _run(work_dir, pg_url, "export", "--all", "-o", str(first))
    imported = _summary(await _run(work_dir, fresh_db, "import", str(first)))
    assert imported == {"stored": 4, "duplicates": 0, "supersessions": 1, "redacted": 0, "deleted_keys": 0, "rejected": [],
                        "dry_run": False}
    await _run(work_dir, fresh_db, "export", "--all", "-o", str(second))
    (header_a, memories_a), (header_b, memories_b) = _lines(first), _lines(second)
    assert _without_export_time(header_a) == _without_export_time(header_b)
    assert memories_a == memories_b
    old = next(m for m in memories_b if m["memory_id"] == ids["old"])
    assert old["superseded_by"] == ids["new"]


async def test_a_second_import_stores_nothing_and_skips_every_memory_as_a_duplicate(
        client, pg_url, fresh_db, work_dir, tmp_path):
    await _store_sample(client)
    path = tmp_path / "all.jsonl"
    await _run(work_dir, pg_url, "export", "--all", "-o", str(path))
    assert _summary(await _run(work_dir, fresh_db, "import", str(path)))["stored"] == 4
    again = _summary(await _run(work_dir, fresh_db, "import", str(path)))
    assert (again["stored"], again["duplicates"], again["supersessions"]) == (0, 4, 0)


async def test_bad_lines_are_reported_with_their_line_numbers_and_the_rest_is_imported(
        client, pg_url, fresh_db, work_dir, tmp_path):
    await _store_sample(client)
    path = tmp_path / "all.jsonl"
    await _run(work_dir, pg_url, "export", "--sessions-like", "team:*", "-o", str(path))
    header, first, *rest = path.read_text().splitlines()
    good = json.loads(first)
    bad = [
        '{"content": "x"',
        json.dumps({**good, "content": "   "}),
        json.dumps({**good, "importance": 2}),
        json.dumps({**good, "colour": "red"}),
        json.dumps({**good, "memory_id": "nope"}),
    ]
    path.write_text("\n".join([header, bad[0], first, *bad[1:], *rest]) + "\n")
    result = await _run(work_dir, fresh_db, "import", str(path))
    summary = _summary(result)
    assert summary["stored"] == 3
    assert [r["line"] for r in summary["rejected"]] == [2, 4, 5, 6, 7]
    reasons = [r["reason"] for r in summary["rejected"]]
    assert reasons[0] == "not JSON (Expecting ',' delimiter at the end of the line)"
    assert reasons[1] == "content: must not be empty or whitespace-only"
    assert reasons[2] == "importance: must be in the range 0..1; got 2"
    assert reasons[3].startswith("colour: is not a field of an exported memory")
    assert reasons[4].startswith("memory_id: must be a memory_id")
    assert "line 4: content: must not be empty or whitespace-only" in result.stderr.decode()


async def test_a_line_that_is_not_json_is_reported_with_one_position_the_files_line_and_the_column(
        client, pg_url, fresh_db, work_dir, tmp_path):
    """The decoder's own "line 2 column 1" (of the one line it was given) sat beside the file's line 4."""
    await _store_sample(client)
    path = tmp_path / "all.jsonl"
    await _run(work_dir, pg_url, "export", "--session", "team:b", "-o", str(path))
    header, first = path.read_text().splitlines()
    path.write_text("\n".join([header, first, "", '{"content" "x"}', "[1,", first]) + "\n")
    result = await _run(work_dir, fresh_db, "import", str(path))
    assert [(r["line"], r["reason"]) for r in _summary(result)["rejected"]] == [
        (4, "not JSON (Expecting ':' delimiter at column 12)"),
        (5, "not JSON (Expecting value at the end of the line)"),
    ]
    assert "line 4: not JSON (Expecting ':' delimiter at column 12)" in result.stderr.decode()


async def test_a_dry_run_counts_what_it_would_store_and_stores_nothing(client, pg_url, fresh_db, work_dir, tmp_path):
    await _store_sample(client)
    path, after = tmp_path / "all.jsonl", tmp_path / "after.jsonl"
    await _run(work_dir, pg_url, "export", "--all", "-o", str(path))
    summary = _summary(await _run(work_dir, fresh_db, "import", str(path), "--dry-run"))
    assert (summary["stored"], summary["supersessions"], summary["dry_run"]) == (4, 1, True)
    await _run(work_dir, fresh_db, "export", "--all", "-o", str(after))
    assert _lines(after)[1] == []


async def test_a_dry_run_counts_the_supersessions_the_real_import_restores(client, pg_url, fresh_db, work_dir, tmp_path):
    """The dry run said "supersessions restored 0" where the import then restored 1."""
    await _store_sample(client)
    path = tmp_path / "all.jsonl"
    await _run(work_dir, pg_url, "export", "--all", "-o", str(path))
    header, *rest = path.read_text().splitlines()
    lines = [line for line in rest if json.loads(line)["session"] == "team:a"]
    path.write_text("\n".join([header, *lines]) + "\n")  # the old memory and its successor
    dry = _summary(await _run(work_dir, fresh_db, "import", str(path), "--dry-run"))
    real = _summary(await _run(work_dir, fresh_db, "import", str(path)))
    assert (dry["stored"], dry["supersessions"]) == (real["stored"], real["supersessions"]) == (2, 1)
    again = _summary(await _run(work_dir, fresh_db, "import", str(path), "--dry-run"))
    assert (again["stored"], again["duplicates"], again["supersessions"]) == (0, 2, 0)
    path.write_text("\n".join([header, lines[0]]) + "\n")  # its successor is neither in the file nor in copy:team:a
    alone = _summary(await _run(work_dir, fresh_db, "import", str(path), "--dry-run", "--session-prefix", "copy:"))
    assert (alone["stored"], alone["supersessions"]) == (1, 0)


async def test_a_session_prefix_imports_beside_the_originals_with_the_same_ids(client, pg_url, work_dir, tmp_path):
    ids = await _store_sample(client)
    path, after = tmp_path / "b.jsonl", tmp_path / "after.jsonl"
    await _run(work_dir, pg_url, "export", "--session", "team:b", "-o", str(path))
    summary = _summary(await _run(work_dir, pg_url, "import", str(path), "--session-prefix", "copy:"))
    assert summary["stored"] == 1
    await _run(work_dir, pg_url, "export", "--sessions-like", "copy:*", "-o", str(after))
    assert [(m["session"], m["memory_id"], m["content"]) for m in _lines(after)[1]] == [
        ("copy:team:b", ids["b"], "Bob likes tea.")]


async def test_a_file_that_is_not_an_export_is_refused_in_one_line_and_nothing_is_stored(fresh_db, work_dir, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"content": "hello"}) + "\n")
    with anyio.fail_after(RUN_TIMEOUT_S):
        result = await anyio.run_process([MCP_MEMORY, "import", str(path)],
                                         env=server_env(work_dir, MCP_MEMORY_DATABASE_URL=fresh_db), check=False)
    assert result.returncode == 2
    assert result.stderr.decode().strip() == (  # one line, before any progress bar
        f"mcp-memory: {path}: not a format import reads: line 1 is no mcp-memory export header, mcp-kg entity "
        "or relation, or mem0 list of memories, and notes need a .md, .markdown or .txt name or a folder "
        "(or give --format)")
    assert result.stdout == b""
    with anyio.fail_after(RUN_TIMEOUT_S):
        named = await anyio.run_process([MCP_MEMORY, "import", "--format", "mcp-memory", str(path)],
                                        env=server_env(work_dir, MCP_MEMORY_DATABASE_URL=fresh_db), check=False)
    assert named.returncode == 2
    assert named.stderr.decode().strip() == (
        f"mcp-memory: {path}: line 1 is not an mcp-memory export header (written by mcp-memory export)")


async def test_a_folder_of_notes_becomes_one_memory_per_paragraph_with_path_heading_and_file_time(
        fresh_db, work_dir, tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(Path(__file__).parent / "fixtures" / "notes", notes)
    os.utime(notes / "travel.md", (1709251200, 1709251200))  # 2024-03-01T00:00:00Z
    os.utime(notes / "projects" / "garden.txt", (1711929600, 1711929600))  # 2024-04-01T00:00:00Z
    summary = _summary(await _run(work_dir, fresh_db, "import", str(notes), "--session", "notes"))
    assert (summary["stored"], summary["rejected"]) == (5, [])
    out = tmp_path / "notes.jsonl"
    await _run(work_dir, fresh_db, "export", "--all", "-o", str(out))
    found = {m["content"]: (m["session"], m["metadata"], m["occurred_at"]) for m in _lines(out)[1]}
    march, april = "2024-03-01T00:00:00+00:00", "2024-04-01T00:00:00+00:00"
    assert found == {
        "Alice flies to Lisbon on the 14th of March.\nShe booked a window seat.":
            ("notes", {"path": "travel.md", "heading": "Travel"}, march),
        "The hotel in Lisbon is near the river.": ("notes", {"path": "travel.md", "heading": "Hotels"}, march),
        "#hashtag lines are text, not headings.": ("notes", {"path": "travel.md", "heading": "Hotels"}, march),
        "Tomatoes go in after the last frost.": ("notes", {"path": "projects/garden.txt", "heading": None}, april),
        "Water the basil every morning.": ("notes", {"path": "projects/garden.txt", "heading": None}, april),
    }
    again = _summary(await _run(work_dir, fresh_db, "import", str(notes), "--format", "markdown", "--session", "notes"))
    assert (again["stored"], again["duplicates"]) == (0, 5)


async def test_notes_without_a_session_are_refused_in_one_line(fresh_db, work_dir):
    notes = Path(__file__).parent / "fixtures" / "notes"
    with anyio.fail_after(RUN_TIMEOUT_S):
        result = await anyio.run_process([MCP_MEMORY, "import", str(notes)],
                                         env=server_env(work_dir, MCP_MEMORY_DATABASE_URL=fresh_db), check=False)
    assert result.returncode == 2
    assert result.stderr.decode().strip().splitlines()[-1] == (
        "mcp-memory: --format markdown needs --session: notes name no session")


async def test_a_running_server_recalls_memories_imported_into_a_session_it_has_already_searched(
        client, pg_url, work_dir, tmp_path):
    await store(client, "live", "Carol drinks coffee every morning.")
    before = await call(client, "recall_memory", {"session": "live", "query": "who likes tea?"})
    assert [m["content"] for m in before["memories"]] == ["Carol drinks coffee every morning."]
    await store(client, "team:b", "Bob likes tea.")
    path = tmp_path / "b.jsonl"
    await _run(work_dir, pg_url, "export", "--session", "team:b", "-o", str(path))
    assert _summary(await _run(work_dir, pg_url, "import", str(path), "--session", "live"))["stored"] == 1
    after = await call(client, "recall_memory", {"session": "live", "query": "who likes tea?"})
    assert after["memories"][0]["content"] == "Bob likes tea."


def _memory_line(memory_id: str, content: str, superseded_by: str | None = None) -> str:
    return json.dumps({"memory_id": memory_id, "session": "loop", "content": content, "occurred_at": "2024-01-01",
                       "superseded_by": superseded_by, "superseded_at": "2024-02-01T00:00:00+00:00" if superseded_by
                       else None, "superseded_source": "explicit" if superseded_by else None})


async def test_supersession_links_that_go_round_in_a_cycle_are_bad_lines_and_none_is_restored(
        fresh_db, work_dir, tmp_path):
    """Found by an attack: A superseded by B, B by C, C by A was restored, and no memory of the
    three was current any more. The links of a cycle are reported by line; a chain beside it stays."""
    a, b, c, d, e = (f"00000000-0000-4000-8000-00000000000{n}" for n in range(1, 6))
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join([
        json.dumps({"format": "mcp-memory", "version": 1}),
        _memory_line(a, "The office is in Lyon.", superseded_by=b),
        _memory_line(b, "The office is in Paris.", superseded_by=c),
        _memory_line(d, "Bob likes tea.", superseded_by=e),
        _memory_line(c, "The office is in Nice.", superseded_by=a),
        _memory_line(e, "Bob likes coffee now."),
    ]) + "\n")
    for dry_run in (["--dry-run"], []):
        summary = _summary(await _run(work_dir, fresh_db, "import", str(path), *dry_run))
        assert [r["line"] for r in summary["rejected"]] == [2, 3, 5]
        assert all(r["reason"].startswith("superseded_by: the file's supersession links go round in a cycle")
                   for r in summary["rejected"])
    assert (summary["stored"], summary["supersessions"]) == (5, 1)
    out = tmp_path / "out.jsonl"
    await _run(work_dir, fresh_db, "export", "--all", "-o", str(out))
    assert {m["memory_id"]: m["superseded_by"] for m in _lines(out)[1]} == {a: None, b: None, c: None, d: e, e: None}


def _linked_pair(tmp_path: Path, older: tuple[str, str], newer: tuple[str, str]) -> Path:
    """An mcp-memory export of two memories of ``team:a`` ((memory_id, content) each), the older one
    (2024-01-01) superseded by the newer (2024-06-01) on 2024-02-01."""
    path = tmp_path / "crafted.jsonl"
    path.write_text("\n".join([
        json.dumps({"format": "mcp-memory", "version": 1}),
        json.dumps({"memory_id": older[0], "session": "team:a", "content": older[1], "occurred_at": "2024-01-01",
                    "superseded_by": newer[0], "superseded_at": "2024-02-01T00:00:00+00:00",
                    "superseded_source": "explicit"}),
        json.dumps({"memory_id": newer[0], "session": "team:a", "content": newer[1], "occurred_at": "2024-06-01"}),
    ]) + "\n")
    return path


async def test_a_deleted_memorys_idempotency_key_survives_export_and_import(
        client, pg_url, fresh_db, work_dir, tmp_path):
    """Found by an attack: the key of a deleted memory was not exported, so after an import a late
    retry with it stored the deleted memory again (before, it is an error: docs/tools.md)."""
    gone = await store(client, "team:a", "A memory the user deleted.", idempotency_key="late-1")
    await store(client, "team:a", "A memory that stays.")
    await call(client, "delete_memory", {"session": "team:a", "memory_id": gone})
    path = tmp_path / "all.jsonl"
    await _run(work_dir, pg_url, "export", "--all", "-o", str(path))
    for dry_run in (["--dry-run"], []):
        summary = _summary(await _run(work_dir, fresh_db, "import", str(path), *dry_run))
        assert (summary["stored"], summary["deleted_keys"], summary["rejected"]) == (1, 1, [])
    again = tmp_path / "again.jsonl"
    await _run(work_dir, fresh_db, "export", "--all", "-o", str(again))
    assert _lines(again)[1] == _lines(path)[1]
    assert _lines(path)[1][-1]["deleted"] is True
    settings = make_settings(fresh_db, work_dir)
    async with served(settings) as imported:
        retry = await imported.call_tool("store_memory", {"session": "team:a", "content": "A memory the user deleted.",
                                                          "idempotency_key": "late-1"})
        assert retry.is_error and "was deleted" in retry.content[0].text, retry.content[0].text
        again = await imported.call_tool("recall_memory", {"session": "team:a", "query": "memory the user deleted"})
        assert all(m["content"] != "A memory the user deleted." for m in again.structured_content["memories"])


async def test_an_import_whose_successor_is_already_stored_under_another_id_keeps_the_link(
        client, pg_url, fresh_db, work_dir, tmp_path):
    """Found by an attack: importing an export into a database that already held the newer fact (stored
    there under its own id) skipped that memory as a duplicate and dropped the link to it, so the fact
    it had replaced was imported as current."""
    ids = await _store_sample(client)
    path = tmp_path / "team.jsonl"
    await _run(work_dir, pg_url, "export", "--session", "team:a", "-o", str(path))
    async with served(make_settings(fresh_db, work_dir)) as target:
        there = await store(target, "team:a", "The office moved to Paris.", occurred_at="2024-06-01")
    for dry_run in (["--dry-run"], []):
        summary = _summary(await _run(work_dir, fresh_db, "import", str(path), *dry_run))
        assert (summary["stored"], summary["duplicates"], summary["supersessions"]) == (1, 1, 1)
    out = tmp_path / "out.jsonl"
    await _run(work_dir, fresh_db, "export", "--all", "-o", str(out))
    assert {m["memory_id"]: m["superseded_by"] for m in _lines(out)[1]} == {ids["old"]: there, there: None}


@pytest.mark.parametrize("reused", ["older", "newer"])
async def test_a_line_skipped_for_reusing_an_id_restores_no_link(client, pg_url, work_dir, tmp_path, reused):
    """Found by an attack. ``older``: a line whose memory_id is the id of other content was reported
    skipped, yet its superseded_by was restored on the memory that already held the id, hiding it from
    recall. ``newer``: the successor's line was skipped so, yet the link to that id was restored, and
    the file's memory was marked superseded by an unrelated memory."""
    held = await store(client, "team:a", "Bob likes tea.", occurred_at="2024-01-05")
    other = "00000000-0000-4000-8000-0000000000cc"
    older, newer = (held, other) if reused == "older" else (other, held)
    path = _linked_pair(tmp_path, (older, "The office is in Lyon."), (newer, "The office moved to Paris."))
    for dry_run in (["--dry-run"], []):
        summary = _summary(await _run(work_dir, pg_url, "import", str(path), *dry_run))
        assert [r["line"] for r in summary["rejected"]] == [2 if reused == "older" else 3]
        assert (summary["stored"], summary["supersessions"]) == (1, 0)
    out = tmp_path / "out.jsonl"
    await _run(work_dir, pg_url, "export", "--session", "team:a", "-o", str(out))
    assert {m["memory_id"]: m["superseded_by"] for m in _lines(out)[1]} == {held: None, other: None}
