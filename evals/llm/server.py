"""llama-cpp-python's OpenAI-compatible server on 127.0.0.1, started for a run and torn down after.

The server runs as ``<python> -m llama_cpp.server`` (``llama-cpp-python[server]==0.3.36``, the
``eval-llm`` extra; it builds from source in about 8 minutes) under ``nice``, with the flags the
measurements in ``evals/README.md`` used: ``--n_ctx 4096 --n_threads 2 --logits_all false`` (the
default ``logits_all`` costs 1.5 GB). Its log goes to a file beside the model.

On a CPU that reports AMX, ggml's AMX kernel crashes the server (SIGSEGV in
``ggml_backend_amx_mul_mat`` on the first request, seen on this machine's virtual Xeon), so by
default (``repack="auto"``) the server is started through ``launch.py``, which turns ggml's extra
buffer types (weight repacking for AMX and AVX2 kernels) off; ``repack="on"`` starts it plainly.

Failure policy: a server that exits, or does not answer ``GET /v1/models`` within ``start_timeout_s``,
raises ``ServerError`` with the end of its log, and is stopped. Stopping sends SIGTERM to the one
process started here, waits up to 15 s, then SIGKILL.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["FLAGS", "RunningServer", "ServerError", "cpu_has_amx", "llama_server"]

logger = logging.getLogger(__name__)

FLAGS = ("--n_ctx", "4096", "--n_threads", "2", "--logits_all", "false")


class ServerError(RuntimeError):
    """The server could not be started or did not become ready."""


@dataclass(frozen=True)
class RunningServer:
    """A started server.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1``.
        model: the model alias requests must name.
        command: the command line it runs.
        log_path: its stdout and stderr.
        started_s: seconds from start until it answered.
    """

    base_url: str
    model: str
    command: tuple[str, ...]
    log_path: Path
    started_s: float


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU reports AMX (``amx_tile`` among the flags); False when it cannot be read."""
    try:
        return " amx_tile" in cpuinfo.read_text()
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


@contextmanager
def llama_server(
    python: str, model_path: Path, alias: str, *, niceness: int = 10, start_timeout_s: float = 300.0,
    extra_flags: tuple[str, ...] = (), repack: str = "auto",
) -> Iterator[RunningServer]:
    """Run llama-cpp-python's server for ``model_path`` while the block runs.

    Args:
        python: the interpreter that has ``llama_cpp`` (the eval-llm venv).
        model_path: the GGUF file.
        alias: the model name the server answers to.
        niceness: ``nice -n`` for the server (the machine is shared).
        start_timeout_s: how long loading may take.
        extra_flags: more server flags, after ``FLAGS``.
        repack: ``auto`` (off on a CPU with AMX), ``on`` or ``off``: ggml's weight repacking.

    Raises:
        ServerError: it exited or did not answer in time (the log's end is in the message).
    """
    port = _free_port()
    plain = repack == "on" or (repack == "auto" and not cpu_has_amx())
    entry = ("-m", "llama_cpp.server") if plain else (str(Path(__file__).with_name("launch.py")),)
    command = ("nice", "-n", str(niceness), python, *entry, "--model", str(model_path),
               "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port), *FLAGS, *extra_flags)
    log_path = model_path.with_name(f"{alias}-server.log")
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    logger.info("started llama-cpp-python (pid %d) on port %d: %s", process.pid, port, " ".join(command))
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        with httpx.Client(timeout=5.0) as http:
            while True:
                if process.poll() is not None:
                    raise ServerError(f"the server exited with {process.returncode}:\n{_tail(log_path)}")
                if time.monotonic() - started > start_timeout_s:
                    raise ServerError(f"the server did not answer within {start_timeout_s:.0f} s:\n{_tail(log_path)}")
                try:
                    if http.get(f"{base_url}/models").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
        ready = RunningServer(base_url, alias, command, log_path, round(time.monotonic() - started, 1))
        logger.info("the server answered after %.1f s", ready.started_s)
        yield ready
    finally:
        _stop(process)
        logger.info("stopped llama-cpp-python (pid %d)", process.pid)
