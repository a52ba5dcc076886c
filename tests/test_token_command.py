"""``mcp-memory token new`` prints a token that works once its entry is pasted; ``doctor`` lists tokens, no secrets."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from bearer import token_client
from processes import MCP_MEMORY, Spawner, free_port, server_env, spawn  # noqa: F401 - spawn is a fixture

pytestmark = pytest.mark.anyio

PLAIN = "plain-" + "p" * 40


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_MEMORY, *args], capture_output=True, text=True, timeout=120, env=env)


async def test_a_new_token_works_after_its_printed_entry_is_pasted(
    pg_url: str, spawn: Spawner, tmp_path: Path
) -> None:
    made = _run("token", "new", "--name", "ci bot", "--sessions", "team:alpha:*", "--sessions", "shared",
                "--rate-limit-per-minute", "100")
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    token = lines[1]
    assert len(token) == 43  # secrets.token_urlsafe(32)
    entry = made.stdout[made.stdout.index("[[auth.tokens]]"):]
    assert token not in entry  # only its SHA-256 goes into the config
    assert 'sessions = ["team:alpha:*", "shared"]' in entry and "can_delete = false" in entry
    other = _run("token", "new", "--name", "x", "--sessions", "*")
    assert other.stdout.splitlines()[1] != token  # random each time

    config = tmp_path / "config.toml"
    config.write_text(entry + f'\n[[auth.tokens]]\nname = "legacy"\ntoken = "{PLAIN}"\nsessions = ["old:*"]\n')
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--config", str(config), MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    async with token_client(port, token) as client:
        own = await client.call_tool("store_memory", {"session": f"team:alpha:{uuid.uuid4().hex[:6]}", "content": "x"})
        assert not own.is_error, own.content
        other_team = await client.call_tool("store_memory", {"session": "team:beta:x", "content": "x"})
        assert other_team.is_error and "may not use this session" in other_team.content[0].text
        refused = await client.call_tool("delete_memory", {"session": "shared", "all": True, "confirm": "shared"})
        assert refused.is_error and "may not delete" in refused.content[0].text

    doctor = _run("--config", str(config), "doctor", env=server_env(spawn.data_dir("doctor"),
                                                                     MCP_MEMORY_DATABASE_URL=pg_url))
    assert doctor.returncode == 0, doctor.stderr
    assert "token 'ci bot': sessions shared, team:alpha:*; cannot delete, 100 calls/min" in doctor.stdout
    assert "token 'legacy': sessions old:*; cannot delete" in doctor.stdout
    assert "WARNING: token 'legacy' is kept in plain text" in doctor.stdout
    assert token not in doctor.stdout and PLAIN not in doctor.stdout
    assert entry.split('token_sha256 = "')[1][:64] not in doctor.stdout


@pytest.mark.parametrize("args", [["--sessions", "a*b"], ["--sessions", ""], ["--sessions", "*", "--name", " "],
                                  ["--sessions", "*", "--rate-limit-per-minute", "0"]])
def test_token_new_refuses_a_bad_pattern_name_or_limit(args: list[str]) -> None:
    done = _run("token", "new", "--name", "n", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("mcp-memory: --")
