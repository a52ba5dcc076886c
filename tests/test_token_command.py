"""``mcp-memory token new`` prints a token that works once its entry is pasted; ``doctor`` lists tokens, no secrets.

The first test runs the installed command (token new, a server, doctor), as a user does; the rest
call the same ``main`` in this process (as tests/test_cli.py does), capturing file descriptors 1 and 2:
each spawn of the command cost 1.5-2 s of CPU, nearly all of it imports.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from bearer import token_client

from mcp_memory.cli import main
from processes import MCP_MEMORY, Spawner, free_port, server_env, spawn  # noqa: F401 - spawn is a fixture

pytestmark = pytest.mark.anyio

PLAIN = "plain-" + "p" * 40


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_MEMORY, *args], capture_output=True, text=True, timeout=120, env=env)


def _main(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``mcp-memory ARGS`` run by the command's ``main`` in this process: exit status, stdout, stderr."""
    capfd.readouterr()
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


async def test_a_new_token_works_after_its_printed_entry_is_pasted(
    pg_url: str, spawn: Spawner, tmp_path: Path
) -> None:
    made = _run("token", "new", "--name", "ci bot", "--sessions", "team:alpha:*", "--sessions", "shared",
                "--rate-limit-per-minute", "100")
    assert made.returncode == 0, made.stderr
    token = made.stdout.removesuffix("\n")
    assert len(token) == 43 and "\n" not in token  # secrets.token_urlsafe(32), alone on stdout
    entry = made.stderr[made.stderr.index("[[auth.tokens]]"):]
    assert token not in made.stderr  # only its SHA-256 goes into the config
    assert 'sessions = ["team:alpha:*", "shared"]' in entry and "can_delete = false" in entry
    other = _run("token", "new", "--name", "x", "--sessions", "*")
    assert other.stdout.strip() != token  # random each time

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


@pytest.mark.parametrize("env", [[], ["--env"]])
def test_token_new_prints_the_bare_token_alone_on_stdout_and_the_prose_on_stderr(env: list[str], capfd) -> None:
    """The token sat on line 2 of stdout between prose and the entry: a script could not capture it."""
    code, out, err = _main(capfd, "token", "new", "--name", "script", "--sessions", "*", *env)
    assert code == 0, err
    assert len(out) == 44 and out.endswith("\n") and out.count("\n") == 1
    assert "shown only now" in err and out.strip() not in err


@pytest.mark.parametrize("args", [["--sessions", "a*b"], ["--sessions", ""], ["--sessions", "*", "--name", " "],
                                  ["--sessions", "*", "--rate-limit-per-minute", "0"]])
def test_token_new_refuses_a_bad_pattern_name_or_limit(args: list[str], capfd) -> None:
    code, out, err = _main(capfd, "token", "new", "--name", "n", *args)
    assert code == 2 and out == ""
    assert err.startswith("mcp-memory: --")


SECRET = "plain-secret-" + "q" * 20


@pytest.mark.parametrize("config", [
    f'[[auth.tokens]]\nname = "short"\ntoken = "{SECRET[:12]}"\nsessions = ["*"]\n',  # the plain token too short
    f'[[auth.tokens]]\nname = "both"\ntoken = "{SECRET}"\ntoken_sha256 = "{"0" * 64}"\nsessions = ["*"]\n',
    f'[[auth.tokens]]\nname = "pattern"\ntoken = "{SECRET}"\nsessions = ["a*b"]\n',
    f'[auth.oauth]\nissuer = "https://i.example"\naudience = "a"\nresource_url = "http://x/mcp"\n'
    f'jwks_url = "http://i/j"\nintrospection_url = "http://i/x"\nclient_id = "c"\nclient_secret = "{SECRET}"\n',
    f'[auth.oauth]\nissuer = "https://i.example"\naudience = "a"\nresource_url = "http://x/mcp"\n'
    f'introspection_url = "http://i/x"\nclient_id = "c"\nclient_secret = ["{SECRET}"]\n',
    f'[llm]\napi_key = ["{SECRET}"]\n',
    f'[recall]\nrerank_api_key = ["{SECRET}"]\n',
])
def test_a_config_error_names_the_key_but_never_echoes_a_secret(
    tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    """Start-up errors go to logs (journald, docker logs): a plain token, client secret or API key stays out."""
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    for name in [name for name in os.environ if name.startswith("MCP_MEMORY_")]:  # as server_env() leaves them
        monkeypatch.delenv(name)
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "data"))
    code, out, err = _main(capfd, "--config", str(tmp_path / "config.toml"), "serve", "--transport", "http")
    assert code == 2 and err.startswith("mcp-memory: invalid settings: "), err
    assert SECRET[:12] not in err + out, err


@pytest.mark.parametrize("text", ['te"am', "back\\slash", "del\x7fete", "tab\there", "line\nbreak", "\u00e9\u200b\U0001f511"])
def test_the_printed_entry_parses_back_to_the_same_name_and_sessions(text: str) -> None:
    """The entry is pasted into config.toml as printed: TOML must read back exactly what was asked for."""
    import tomllib

    from mcp_memory.http.auth import token_entry

    entry = tomllib.loads(token_entry("t" * 43, text, [f"team:{text}:*", text], False, None))["auth"]["tokens"][0]
    assert entry["name"] == text and entry["sessions"] == [f"team:{text}:*", text]
