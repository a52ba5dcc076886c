"""Binding: loopback by default, no public bind without auth, Host and Origin checked on every address."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bearer import INITIALIZE, post, sha256, write_config
from processes import MCP_MEMORY, Spawner, free_port, server_env, spawn  # noqa: F401 - spawn is a fixture

pytestmark = pytest.mark.anyio

TOKEN = "binding-" + "b" * 40


def test_a_public_host_without_auth_refuses_to_start_and_says_how_to_add_a_token(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::", "192.0.2.10", "memory.example.com"):
        done = subprocess.run([MCP_MEMORY, "serve", "--transport", "http", "--host", host, "--port", str(free_port())],
                              env=server_env(tmp_path / "data"), capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"mcp-memory: refusing to serve on {host} without authentication")
        assert "mcp-memory token new --name NAME --sessions" in lines[0]
        assert not (tmp_path / "data" / "pg").exists()  # refused before starting anything


def _initialize(port: int, host: str | None = None, origin: str | None = None, token: str | None = None) -> int:
    headers = {}
    if host is not None:
        headers["Host"] = host
    if origin is not None:
        headers["Origin"] = origin
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return post(port, INITIALIZE, headers).status_code


def _check_host_and_origin(port: int, token: str | None, bind_name: str) -> None:
    assert _initialize(port, token=token) == 200
    assert _initialize(port, host=f"{bind_name}:{port}", token=token) == 200
    assert _initialize(port, host=f"localhost:{port}", origin=f"http://localhost:{port}", token=token) == 200
    assert _initialize(port, host="evil.example", token=token) == 421
    assert _initialize(port, host=f"evil.example:{port}", token=token) == 421
    assert _initialize(port, origin="http://evil.example", token=token) == 403
    assert _initialize(port, host="evil.example", origin="http://evil.example", token=token) == 421


async def test_insecure_no_auth_serves_a_public_host_with_a_warning_and_host_checks(pg_url: str, spawn: Spawner) -> None:
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--host", "0.0.0.0", "--insecure-no-auth",
                        MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    warnings = [line for line in server.stderr.splitlines() if "WARNING" in line and "WITHOUT authentication" in line]
    assert len(warnings) == 1, server.stderr
    _check_host_and_origin(port, None, "0.0.0.0")


async def test_a_public_host_with_tokens_starts_and_keeps_host_and_origin_checks(
    pg_url: str, spawn: Spawner, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "config.toml", [{"name": "t", "token_sha256": sha256(TOKEN), "sessions": ["*"]}])
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--host", "0.0.0.0", "--config", str(config),
                        MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    assert "WITHOUT authentication" not in server.stderr
    assert _initialize(port) == 401  # no token: refused before the Host check
    _check_host_and_origin(port, TOKEN, "0.0.0.0")


async def test_configured_allowed_hosts_and_origins_add_to_the_defaults(
    pg_url: str, spawn: Spawner, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "config.toml", sections={"http": {
        "allowed_hosts": ["memory.example.com"], "allowed_origins": ["https://app.example.com"]}})
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--config", str(config), MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    assert _initialize(port, host="memory.example.com", origin="https://app.example.com") == 200
    assert _initialize(port, host=f"localhost:{port}", origin=f"http://127.0.0.1:{port}") == 200  # still a default
    assert _initialize(port, host="memory.example.com.evil.example") == 421
    assert _initialize(port, origin="https://evil.example") == 403


async def test_a_server_on_every_address_accepts_this_machines_names_and_no_other(
    pg_url: str, spawn: Spawner, tmp_path: Path
) -> None:
    """On 0.0.0.0 a client on the network sends the machine's address or name as Host (issue 11's fresh
    user got 421 for both); a DNS-rebinding page sends its own domain."""
    import socket

    import psutil

    config = write_config(tmp_path / "config.toml", [{"name": "t", "token_sha256": sha256(TOKEN), "sessions": ["*"]}])
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--host", "0.0.0.0", "--config", str(config),
                        MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    addresses = [a.address for nic in psutil.net_if_addrs().values() for a in nic
                 if a.family == socket.AF_INET and not a.address.startswith("127.")]
    for name in [socket.gethostname(), *addresses]:
        assert _initialize(port, token=TOKEN, host=f"{name}:{port}") == 200, name
    assert _initialize(port, token=TOKEN, host=f"evil.example:{port}") == 421
    assert "accepting Host" in server.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "localhost.", "::ffff:127.0.0.1", "127.1", "", "ip6-localhost"])
def test_every_host_not_plainly_loopback_needs_auth_and_oauth_alone_is_auth(host: str) -> None:
    """A name or spelling that might not be loopback counts as public (fail closed)."""
    from mcp_memory.errors import ConfigError
    from mcp_memory.http.app import check_binding
    from mcp_memory.settings import Settings

    with pytest.raises(ConfigError, match="refusing to serve"):
        check_binding(Settings(), host, insecure_no_auth=False)
    oauth = {"issuer": "https://auth.example.com", "audience": "a", "resource_url": "https://m.example.com/mcp",
             "jwks_url": "https://auth.example.com/jwks"}
    check_binding(Settings(auth={"oauth": oauth}), host, insecure_no_auth=False)  # starts: no exception
