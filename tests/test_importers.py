"""mcp-memory import of what people bring from elsewhere (the MCP memory server's knowledge graph,
mem0's get_all JSON), and import on the embedded database or beside running servers; run as a
user runs it (the installed command, a real database)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from processes import MCP_MEMORY, fresh_db, free_port, http_tool, server_env, spawn  # noqa: F401 - fixtures

pytestmark = pytest.mark.anyio

RUN_TIMEOUT_S = 120.0
FIXTURES = Path(__file__).parent / "fixtures"


async def _run(data_dir: Path, url: str | None, *args: str, code: int = 0) -> subprocess.CompletedProcess[bytes]:
    """``mcp-memory ARGS`` against the database ``url`` (None: the embedded one in ``data_dir``)."""
    settings = {} if url is None else {"MCP_MEMORY_DATABASE_URL": url}
    with anyio.fail_after(RUN_TIMEOUT_S):
        result = await anyio.run_process([MCP_MEMORY, *args], env=server_env(data_dir, **settings), check=False)
    assert result.returncode == code, result.stderr.decode()
    return result


async def _import(data_dir: Path, url: str | None, *args: str) -> dict[str, Any]:
    return json.loads((await _run(data_dir, url, "import", *args)).stdout)


async def _exported(data_dir: Path, url: str | None) -> dict[tuple[str, str], dict[str, Any]]:
    """Every memory in the database, by (session, content)."""
    result = await _run(data_dir, url, "export", "--all")
    _, *memories = (json.loads(line) for line in result.stdout.decode().splitlines())
    return {(m["session"], m["content"]): m for m in memories}


def _graph(tmp_path: Path) -> Path:
    path = tmp_path / "memory.jsonl"
    shutil.copy(FIXTURES / "mcp_kg" / "memory.jsonl", path)
    os.utime(path, (1717200000, 1717200000))  # 2024-06-01T00:00:00Z
    return path


KG_MEMORIES = {
    "Alice: Works at Acme as a data engineer": {"entity": "Alice", "entity_type": "person"},
    "Alice: Speaks Portuguese": {"entity": "Alice", "entity_type": "person"},
    "Acme (organization)": {"entity": "Acme", "entity_type": "organization"},
    "Alice works at Acme": {"from": "Alice", "to": "Acme", "relation": "works_at"},
    "Alice lives in Lisbon": {"from": "Alice", "to": "Lisbon", "relation": "lives in"},
}


async def test_a_knowledge_graph_becomes_a_memory_per_observation_and_relation_with_the_entity_in_metadata(
        fresh_db, work_dir, tmp_path):
    path = _graph(tmp_path)
    summary = await _import(work_dir, fresh_db, str(path), "--session", "kg")
    assert summary == {"stored": 5, "duplicates": 0, "supersessions": 0, "redacted": 0, "deleted_keys": 0, "rejected": [],
                       "dry_run": False}
    found = await _exported(work_dir, fresh_db)
    assert {content: (session, m["metadata"], m["occurred_at"]) for (session, content), m in found.items()} == {
        content: ("kg", metadata, "2024-06-01T00:00:00+00:00") for content, metadata in KG_MEMORIES.items()}
    again = await _import(work_dir, fresh_db, str(path), "--format", "mcp-kg", "--session", "kg")
    assert (again["stored"], again["duplicates"]) == (0, 5)


async def test_a_graph_that_grew_imports_only_the_new_observation(fresh_db, work_dir, tmp_path):
    path = _graph(tmp_path)
    await _import(work_dir, fresh_db, str(path), "--session", "kg")
    lines = path.read_text().splitlines()
    grown = json.loads(lines[0])
    grown["observations"].append("Plays the cello")
    path.write_text("\n".join([json.dumps(grown), *lines[1:]]))
    again = await _import(work_dir, fresh_db, str(path), "--session", "kg")
    assert (again["stored"], again["duplicates"]) == (1, 5)
    assert ("kg", "Alice: Plays the cello") in await _exported(work_dir, fresh_db)


async def test_bad_graph_lines_are_reported_by_line_number_and_the_rest_is_imported(fresh_db, work_dir, tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join([
        '{"type":"entity","name":"Bob","entityType":"person","observations":["Likes tea"]}',
        '{"type":"entity"',
        '{"type":"entity","name":"Carol","observations":["Has no type"]}',
        '{"type":"relation","from":"Bob","to":"Carol"}',
        '{"type":"note","text":"not of the graph"}',
        '{"type":"entity","name":"Dan","entityType":"person","observations":["  "]}',
        json.dumps({"type": "entity", "name": "Eve", "entityType": "person", "observations": ["x" * 33_000]}),
        "",
        '{"type":"relation","from":"Bob","to":"Carol","relationType":"knows"}',
    ]))
    result = await _run(work_dir, fresh_db, "import", str(path), "--session", "kg")
    summary = json.loads(result.stdout)
    assert summary["stored"] == 2
    assert summary["rejected"] == [
        {"line": 2, "reason": "not JSON (Expecting ',' delimiter at the end of the line)"},
        {"line": 3, "reason": "entityType: must be a string; got NoneType"},
        {"line": 4, "reason": "relationType: must be a string; got NoneType"},
        {"line": 5, "reason": "type: must be 'entity' or 'relation'; got 'note'"},
        {"line": 6, "reason": "observations: must not hold an empty or whitespace-only observation"},
        {"line": 7, "reason": "content: is 33005 characters; the limit is 32000 characters"},
    ]
    assert "line 3: entityType: must be a string; got NoneType" in result.stderr.decode()
    assert set(await _exported(work_dir, fresh_db)) == {("kg", "Bob: Likes tea"), ("kg", "Bob knows Carol")}


async def test_a_graph_without_a_session_is_refused_in_one_line_and_nothing_is_stored(fresh_db, work_dir, tmp_path):
    result = await _run(work_dir, fresh_db, "import", str(_graph(tmp_path)), code=2)
    assert result.stderr.decode().strip().splitlines()[-1] == (
        "mcp-memory: --format mcp-kg needs --session: a knowledge graph names no session")
    assert await _exported(work_dir, fresh_db) == {}


async def test_mem0_memories_keep_their_ids_user_ids_as_sessions_and_created_at_as_occurred_at(
        fresh_db, work_dir):
    path = FIXTURES / "mem0" / "get_all.json"
    summary = await _import(work_dir, fresh_db, str(path))
    assert summary == {"stored": 3, "duplicates": 0, "supersessions": 0, "redacted": 0, "deleted_keys": 0, "rejected": [],
                       "dry_run": False}
    found = await _exported(work_dir, fresh_db)
    trip = found[("sam", "Is planning a trip to Oslo in June")]
    assert trip["memory_id"] == "5d0c7a52-91e4-4f0b-8a3e-2c6f1b7d9e40"
    assert (trip["occurred_at"], trip["created_at"]) == ("2024-02-10T16:15:00.250000+00:00",) * 2
    assert trip["metadata"] == {"mem0": {"user_id": "sam", "updated_at": "2024-05-01T12:00:00-07:00"}}
    meat = found[("sam", "Does not eat meat")]
    assert meat["memory_id"] == "a7e3c1d9-0b42-4c6e-b5f8-93d2e1a4c7b6"
    assert meat["occurred_at"] == "2024-03-05T19:30:00+00:00"
    assert meat["metadata"] == {"source": "onboarding", "mem0": {"user_id": "sam", "categories": ["food", "health"]}}
    bullets = found[("writer", "Likes answers in bullet points")]  # no user_id: the agent_id names the session
    assert bullets["occurred_at"] == "2024-04-01T07:00:00+00:00"
    assert bullets["metadata"] == {"mem0": {"agent_id": "writer", "id": "pref-7"}}
    assert uuid.UUID(bullets["memory_id"]).version == 5  # not a UUID in mem0: derived from it
    again = await _import(work_dir, fresh_db, str(path), "--format", "mem0")
    assert (again["stored"], again["duplicates"]) == (0, 3)


async def test_mem0_bad_items_are_reported_by_the_line_they_start_on_and_session_overrides_user_id(
        fresh_db, work_dir, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text("\n".join([
        "[",
        '  {"id": "0f5e4d3c-2b1a-4c9d-8e7f-6a5b4c3d2e1f", "memory": "Good one", "created_at": "2024-01-01",',
        '   "user_id": "u"},',
        '  {"id": "x", "created_at": "2024-01-01", "user_id": "u"},',
        '  "just text",',
        '  {"id": "z", "memory": "Bad time", "created_at": "yesterday", "user_id": "u"},',
        '  {"id": "w", "memory": "", "created_at": "2024-01-01"},',
        '  {"memory": "No id", "created_at": "2024-01-01"}',
        "]",
    ]))
    summary = await _import(work_dir, fresh_db, str(path), "--session", "mine")
    assert summary["stored"] == 1
    assert summary["rejected"] == [
        {"line": 4, "reason": "memory: is missing (every mem0 memory has one)"},
        {"line": 5, "reason": "item: must be a JSON object (one mem0 memory)"},
        {"line": 6, "reason": "created_at: could not parse 'yesterday' as ISO 8601"},
        {"line": 7, "reason": "content: must not be empty or whitespace-only"},
        {"line": 8, "reason": "id: is missing (every mem0 memory has one)"},
    ]
    found = await _exported(work_dir, fresh_db)
    assert list(found) == [("mine", "Good one")]
    assert found[("mine", "Good one")]["memory_id"] == "0f5e4d3c-2b1a-4c9d-8e7f-6a5b4c3d2e1f"


async def test_a_mem0_memory_without_user_agent_or_run_id_needs_a_session(fresh_db, work_dir, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps([{"id": "a", "memory": "Nobody's", "created_at": "2024-01-01"}]))
    summary = await _import(work_dir, fresh_db, str(path), "--dry-run")
    assert summary["rejected"] == [
        {"line": 1, "reason": "user_id: is missing (and so are agent_id and run_id); give --session"}]


async def test_a_file_that_is_not_mem0_json_is_refused_in_one_line(fresh_db, work_dir, tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text('{"results": [{"memory": "cut off"')
    result = await _run(work_dir, fresh_db, "import", str(path), "--format", "mem0", "--session", "s", code=2)
    assert result.stderr.decode().strip().splitlines()[-1].startswith(f"mcp-memory: {path}: not a mem0 export: not JSON")


async def test_auto_tells_each_format_apart(fresh_db, work_dir, tmp_path):
    """A dry run of each under --format auto counts its memories, which only the right reader finds."""
    mem0_list = tmp_path / "list.json"
    mem0_list.write_text(json.dumps([{"id": "a", "memory": "m", "created_at": "2024-01-01", "user_id": "u"}]))
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps({"results": json.loads(mem0_list.read_text())}))
    for path, stored in [(_graph(tmp_path), 5), (FIXTURES / "mem0" / "get_all.json", 3), (mem0_list, 1),
                         (one_line, 1), (FIXTURES / "notes", 5)]:
        summary = await _import(work_dir, fresh_db, str(path), "--session", "s", "--dry-run")
        assert (path.name, summary["stored"], summary["rejected"]) == (path.name, stored, [])


async def test_import_and_export_work_on_the_embedded_database_with_no_server_running(spawn, tmp_path):
    data_dir = spawn.data_dir("embedded")
    spawn.data_dirs.add(data_dir)  # stops its PostgreSQL if a command left it running
    summary = await _import(data_dir, None, str(_graph(tmp_path)), "--session", "kg")
    assert summary["stored"] == 5
    assert set(await _exported(data_dir, None)) == {("kg", content) for content in KG_MEMORIES}
    assert (data_dir / "pg").is_dir()


async def test_an_import_through_the_database_url_is_recalled_over_mcp_by_a_server_running_on_it(
        spawn, fresh_db, work_dir, tmp_path):
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--stateless", MCP_MEMORY_DATABASE_URL=fresh_db)
    server.wait_healthy(port)
    error, text, structured, _ = await anyio.to_thread.run_sync(
        http_tool, port, "recall_memory", {"session": "kg", "query": "Which languages does Alice speak?"})
    assert not error and structured["memories"] == []
    assert (await _import(work_dir, fresh_db, str(_graph(tmp_path)), "--session", "kg"))["stored"] == 5
    error, text, structured, _ = await anyio.to_thread.run_sync(
        http_tool, port, "recall_memory", {"session": "kg", "query": "Which languages does Alice speak?"})
    assert not error, text
    assert structured["memories"][0]["content"] == "Alice: Speaks Portuguese"


async def test_a_note_that_links_to_a_file_outside_the_folder_is_not_imported(fresh_db, work_dir, tmp_path):
    """A folder of notes from elsewhere (a cloned repository) may hold ``notes.md -> ~/.aws/credentials``:
    rglob follows file links, so the secret outside the folder became a memory agents could recall.
    Links inside the folder still count; a link out is skipped and named on stderr."""
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "credentials").write_text("aws_secret_access_key = AKIAOUTSIDE\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plain.md").write_text("The boat leaves at nine.\n")
    (notes / "stolen.md").symlink_to(outside / "credentials")
    (notes / "alias.md").symlink_to(notes / "plain.md")
    result = await _run(work_dir, fresh_db, "import", str(notes), "--session", "linked")

    assert {content for _, content in await _exported(work_dir, fresh_db)} == {"The boat leaves at nine."}
    assert "stolen.md" in result.stderr.decode() and "AKIAOUTSIDE" not in result.stderr.decode()


NESTED = "[" * 100_000  # deeper than Python's JSON decoder recurses


@pytest.mark.parametrize("fmt", ["auto", "mcp-kg"])
async def test_a_graph_line_nested_past_the_decoders_limit_is_rejected_by_number_and_the_rest_imported(
        fresh_db, work_dir, tmp_path, fmt):
    """Such a line raised RecursionError out of the importer: a traceback, exit 1, nothing imported."""
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join([
        '{"type":"entity","name":"Bob","entityType":"person","observations":["Likes tea"]}', NESTED,
        '{"type":"entity","name":"Ann","entityType":"person","observations":["Likes coffee"]}']))
    summary = json.loads((await _run(work_dir, fresh_db, "import", str(path), "--format", fmt, "--session", "kg")).stdout)

    assert summary["stored"] == 2 and [r["line"] for r in summary["rejected"]] == [2]
    assert summary["rejected"][0]["reason"].startswith("not JSON")


async def test_an_export_line_nested_past_the_decoders_limit_is_rejected_by_number(fresh_db, work_dir, tmp_path):
    exported = (await _run(work_dir, fresh_db, "export", "--all")).stdout.decode().splitlines()
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join([exported[0], NESTED]) + "\n")
    summary = json.loads((await _run(work_dir, fresh_db, "import", str(path))).stdout)
    assert summary["stored"] == 0 and [r["line"] for r in summary["rejected"]] == [2]


@pytest.mark.parametrize("text", [NESTED, '{"results": [' + '{"a":' * 100_000 + "]}"])
async def test_a_mem0_file_nested_past_the_decoders_limit_is_refused_in_one_line(fresh_db, work_dir, tmp_path, text):
    path = tmp_path / "mem0.json"
    path.write_text(text)
    result = await _run(work_dir, fresh_db, "import", str(path), "--format", "mem0", "--session", "m", code=2)
    assert "not a mem0 export: not JSON" in result.stderr.decode() and "Traceback" not in result.stderr.decode()


@pytest.mark.parametrize("fmt", ["auto", "mcp-kg"])
async def test_a_graph_saved_with_a_byte_order_mark_imports(fresh_db, work_dir, tmp_path, fmt):
    """Editors on Windows save UTF-8 with a BOM: line 1 was rejected ('Unexpected UTF-8 BOM') and
    ``auto`` took the file for a broken mcp-memory export (exit 2)."""
    path = tmp_path / "memory.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "mcp_kg" / "memory.jsonl").read_bytes())
    summary = json.loads((await _run(work_dir, fresh_db, "import", str(path), "--format", fmt, "--session", "kg")).stdout)
    assert summary["stored"] == len(KG_MEMORIES) and summary["rejected"] == []


async def test_a_mem0_file_and_an_export_saved_with_a_byte_order_mark_import(fresh_db, work_dir, tmp_path):
    mem0 = tmp_path / "mem0.json"
    mem0.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "mem0" / "get_all.json").read_bytes())
    first = json.loads((await _run(work_dir, fresh_db, "import", str(mem0), "--session", "m")).stdout)
    assert first["stored"] > 0 and first["rejected"] == []
    export = tmp_path / "export.jsonl"
    export.write_bytes(b"\xef\xbb\xbf" + (await _run(work_dir, fresh_db, "export", "--all")).stdout)
    again = json.loads((await _run(work_dir, fresh_db, "import", str(export))).stdout)
    assert again["stored"] == 0 and again["duplicates"] == first["stored"] and again["rejected"] == []


async def test_a_mem0_id_reused_for_other_content_is_a_bad_line_and_the_same_memory_again_a_duplicate(
        fresh_db, work_dir, tmp_path):
    """Found by an attack: the second memory under one mem0 id was silently dropped as a duplicate."""
    path = tmp_path / "mem0.json"
    path.write_text("\n".join([
        "[",
        '  {"id": "m-1", "memory": "Likes tea", "created_at": "2024-01-01", "user_id": "u"},',
        '  {"id": "m-1", "memory": "Likes coffee", "created_at": "2024-01-02", "user_id": "u"},',
        '  {"id": "m-1", "memory": "Likes tea", "created_at": "2024-01-01", "user_id": "u"}',
        "]",
    ]))
    for dry_run in (["--dry-run"], []):
        summary = await _import(work_dir, fresh_db, str(path), *dry_run)
        assert [r["line"] for r in summary["rejected"]] == [3]
        assert "is the id of other content in session 'u' (line 2)" in summary["rejected"][0]["reason"]
        assert (summary["stored"], summary["duplicates"]) == (1, 1)
    again = tmp_path / "again.json"  # a later file reusing the id: the database holds the first
    again.write_text(json.dumps([{"id": "m-1", "memory": "Likes water", "created_at": "2024-01-03", "user_id": "u"}]))
    summary = await _import(work_dir, fresh_db, str(again))
    assert summary["stored"] == 0 and summary["rejected"][0]["line"] == 1
    assert "(an earlier line or import)" in summary["rejected"][0]["reason"]
    assert [content for _, content in await _exported(work_dir, fresh_db)] == ["Likes tea"]


def _write_format(fmt: str, n: int, folder: Path) -> Path:
    """A file of ``n`` memories in ``fmt`` (mem0 as one line: the case a line reader cannot split)."""
    folder.mkdir(parents=True)
    if fmt == "mcp-memory":
        lines = [json.dumps({"format": "mcp-memory", "version": 1})] + [json.dumps(
            {"memory_id": str(uuid.UUID(int=i + 1)), "session": "s", "content": f"Memory {i} about the kiln",
             "occurred_at": "2024-01-01"}) for i in range(n)]
        path, text = folder / "export.jsonl", "\n".join(lines) + "\n"
    elif fmt == "mcp-kg":
        path, text = folder / "memory.jsonl", "".join(json.dumps(
            {"type": "entity", "name": f"E{i}", "entityType": "thing", "observations": [f"Fact {i}"]}) + "\n"
            for i in range(n))
    elif fmt == "mem0":
        path, text = folder / "mem0.json", json.dumps({"results": [
            {"id": f"m-{i}", "memory": f"Likes tea {i}", "created_at": "2024-01-01", "user_id": "u"}
            for i in range(n)]})
    else:
        path, text = folder / "notes.md", "".join(f"Paragraph {i} of the notes.\n\n" for i in range(n))
    path.write_text(text)
    return path


READ_ALL = """
import resource, sys
from pathlib import Path
from mcp_memory.transfer.entries import read_entries
for fmt, path in zip(sys.argv[1::2], sys.argv[2::2]):
    total, entries = read_entries(Path(path), fmt, "s")
    assert sum(1 for _ in entries) == total
    print(fmt, total, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
"""
FORMATS = ("mcp-memory", "mcp-kg", "mem0", "markdown")


def test_every_format_is_read_as_a_stream_so_ten_times_the_entries_take_no_more_memory(tmp_path):
    """Found by an attack: a 70 MB mcp-kg file (300k entities) peaked at 524 MB RSS with --dry-run, as
    the importer listed every entry first (mem0 and notes were read whole too). One process reads
    2,000 entries of each format, then 20,000 of each: its peak RSS (KiB) may not grow by 6 MB, where
    holding 18,000 more entries would take over 20 MB."""
    small = [part for fmt in FORMATS for part in (fmt, str(_write_format(fmt, 2_000, tmp_path / f"{fmt}-small")))]
    big = [part for fmt in FORMATS for part in (fmt, str(_write_format(fmt, 20_000, tmp_path / f"{fmt}-big")))]
    result = subprocess.run([sys.executable, "-c", READ_ALL, *small, *big], capture_output=True, timeout=60, check=True)
    rows = [line.split() for line in result.stdout.decode().splitlines()]
    expected = [(f, 2_000) for f in FORMATS] + [(f, 20_000) for f in FORMATS]
    assert [(fmt, int(total)) for fmt, total, _ in rows] == expected
    peaks = [int(peak) for _, _, peak in rows]
    assert peaks[-1] - peaks[3] < 6 * 1024, peaks
