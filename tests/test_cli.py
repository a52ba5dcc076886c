"""The command line: options before or after the command, one-line configuration errors."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from mcp_memory import __version__
from mcp_memory.cli import main
from mcp_memory.settings import Settings


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"mcp-memory {__version__}"


@pytest.mark.parametrize("argv", [["--config", "/nonexistent.toml", "serve"], ["serve", "--config", "/nonexistent.toml"]])
def test_config_may_come_before_or_after_the_command(argv, capsys):
    assert main(argv) == 2
    assert "config file not found: /nonexistent.toml" in capsys.readouterr().err


def test_a_bad_setting_is_one_line_naming_the_key(monkeypatch, capsys):
    monkeypatch.setenv("MCP_MEMORY_LIMITS__MAX_CONTENT_CHARS", "abc")
    assert main(["doctor"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcp-memory: invalid settings: limits.max_content_chars:")
    assert "Traceback" not in err


def test_a_misspelt_key_in_the_config_file_is_rejected_naming_the_nearest_setting(tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text("[limits]\nmax_content_char = 5\n")
    assert main(["--config", str(config), "doctor"]) == 2
    assert capsys.readouterr().err.strip() == (
        "mcp-memory: invalid settings: unknown setting limits.max_content_char (did you mean limits.max_content_chars?)")


def test_an_http_server_whose_port_is_taken_exits_non_zero(tmp_path, pg_url):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "mcp_memory", "serve", "--transport", "http", "--port", str(port)],
            env={"MCP_MEMORY_DATABASE_URL": pg_url, "MCP_MEMORY_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2
    assert f"could not listen on 127.0.0.1:{port}" in result.stderr
    assert "serving MCP at" not in result.stderr  # said only once the port is bound
    assert result.stdout == ""


def test_a_misspelt_top_level_key_or_section_in_the_config_file_is_named_as_such_not_as_an_extra_input(
        tmp_path, capsys):
    """An unknown section read "recal: Extra inputs are not permitted (got {'rrf_k': 5})": pydantic's words."""
    config = tmp_path / "config.toml"
    for text, said in [
        ('log_levl = "DEBUG"\n', "unknown setting log_levl (did you mean log_level?)"),
        ("[recal]\nrrf_k = 5\n", "unknown section [recal] (did you mean [recall]?)"),
        ("[auth.oatuh]\nissuer = 'x'\n", "unknown section [auth.oatuh] (did you mean [auth.oauth]?)"),
        ("[recall]\nrrfk = 5\n", "unknown setting recall.rrfk (did you mean recall.rrf_k?)"),
        ("[[auth.tokens]]\nname = 'a'\ntoken = '0123456789abcdef'\nsesions = ['a']\n",
         "unknown setting auth.tokens.0.sesions (did you mean auth.tokens.0.sessions?)"),
        ("[stdio]\nzzz = 1\n", "unknown setting stdio.zzz (stdio's settings: "),
    ]:
        config.write_text(text)
        assert main(["--config", str(config), "doctor"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("mcp-memory: invalid settings: ") and said in err, err
        assert "Extra inputs" not in err and "\n" not in err


def test_a_misspelt_group_key_in_the_environment_is_named_as_an_unknown_setting(monkeypatch, capsys):
    monkeypatch.setenv("MCP_MEMORY_RECALL__RRFK", "5")
    assert main(["doctor"]) == 2
    assert capsys.readouterr().err.strip() == (
        "mcp-memory: invalid settings: unknown setting recall.rrfk (did you mean recall.rrf_k?)")


def test_a_misspelt_environment_variable_is_rejected_naming_it(monkeypatch, capsys):
    monkeypatch.setenv("MCP_MEMORY_LOG_LEVL", "DEBUG")
    assert main(["doctor"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcp-memory: unknown setting MCP_MEMORY_LOG_LEVL in the environment; settings are ")
    assert "MCP_MEMORY_LOG_LEVEL" in err and "\n" not in err


@pytest.mark.parametrize(("args", "named"), [(["--sse"], "--sse"), (["--port", "9999", "--stateless"], "--port, --stateless")])
def test_http_options_without_the_http_transport_are_refused_not_ignored(args, named, capsys):
    """`serve --port 9999` ran on stdio and silently ignored the port (found by a fresh user)."""
    assert main(["serve", *args]) == 2
    assert capsys.readouterr().err.strip() == f"mcp-memory: {named} only apply to --transport http"


def test_the_log_level_option_takes_any_case(monkeypatch, capsys):
    monkeypatch.setenv("MCP_MEMORY_LIMITS__MAX_CONTENT_CHARS", "abc")  # stop right after the options are read
    assert main(["--log-level", "warning", "doctor"]) == 2
    assert "invalid choice" not in capsys.readouterr().err


def test_an_empty_variable_means_the_default_as_a_bundle_leaves_an_unset_option(monkeypatch, tmp_path):
    """A Claude Desktop bundle passes every user_config option it declares, "" for one left empty
    (manifest.json); "" used to set data_dir to the working directory and the LLM URL to ""."""
    for name in ("MCP_MEMORY_DATA_DIR", "MCP_MEMORY_DATABASE_URL", "MCP_MEMORY_LLM__BASE_URL",
                 "MCP_MEMORY_LLM__API_KEY", "MCP_MEMORY_LLM__ANSWER_MODEL"):
        monkeypatch.setenv(name, "")
    settings = Settings.load()
    assert settings.data_dir == Settings.model_fields["data_dir"].default_factory()  # type: ignore[misc]
    assert settings.database_url is None
    assert settings.llm.base_url is None and settings.llm.api_key is None and settings.llm.answer_model is None
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path))
    assert Settings.load().data_dir == tmp_path
