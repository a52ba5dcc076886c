"""Nothing leaves the machine: every process mcp-memory starts connects only to loopback and Unix sockets.

Issue 25, part 1: ONNX Runtime 1.32 sends telemetry (a DNS query for mobile.events.data.microsoft.com,
then HTTPS) whenever an InferenceSession is created, unless ``ORT_DISABLE_TELEMETRY=1`` is in the
environment first. Each command runs under ``strace -f`` (Debian's strace; the network here may be
closed, but the connect() and DNS attempts still show) on one data directory, as a new user would
run them, with no LLM, embedding or rerank endpoint configured: ``model prepare`` on a fresh one
first (it runs the quantization child), then, on the prepared model and the embedded PostgreSQL,
``serve`` over stdio and over HTTP, a second ``serve`` whose proxy variables point at a listener of
the test's own (some libraries honour only those), and ``doctor``, ``export`` and ``import`` while
they run.

ONNX Runtime's uploader first connects about 9 s after a session is created (measured: 8.9 and 9.4 s
with 1.32.0), and a process that ends sooner sends nothing. So the servers stay up for
``TELEMETRY_WINDOW_S`` after their first store and recall (ending early if a trace shows traffic):
without the fix this file fails on the DNS queries of ``serve`` and on the proxy's CONNECT requests.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from processes import MCP_MEMORY, ServerProcess, Spawner, free_port, http_tool, server_env, wait_until

pytestmark = pytest.mark.slow  # about 100 s on 2 busy cores: a fresh model rewrite, 6 commands, a 15 s window

STRACE = shutil.which("strace") or "/usr/bin/strace"
COMMAND_TIMEOUT_S = 300.0  # model prepare on a fresh data dir: the int8 rewrite, on a busy 2-core machine
SYSCALLS = "connect,sendto,sendmsg,sendmmsg"  # a DNS query is a connect() to port 53, then a send
LOCAL_FAMILIES = {"AF_UNIX", "AF_NETLINK", "AF_UNSPEC"}  # AF_UNSPEC: a UDP socket's connect() undone
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
SESSION = "s-network"
TELEMETRY_WINDOW_S = 15.0

_FAMILY = re.compile(r"sa_family=(AF_\w+)")
_INET = re.compile(r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'sin6_port=htons\((\d+)\).*?inet_pton\(AF_INET6, "([^"]+)"')


def outbound(trace: str) -> list[str]:
    """The lines of an ``strace -f`` log that reach past this machine.

    A line names an address family in each socket address it holds. Unix, netlink and AF_UNSPEC
    addresses are local; an IPv4 or IPv6 address is local when it is loopback (127.0.0.0/8, ::1,
    ::ffff:127.x) and its port is not 53: a DNS query to a local resolver is still the lookup of an
    outside name. Any other family is outbound.
    """
    found = []
    for line in trace.splitlines():
        families = _FAMILY.findall(line)
        addresses = _INET.findall(line) + _INET6.findall(line)
        local = all(family in LOCAL_FAMILIES | {"AF_INET", "AF_INET6"} for family in families) and all(
            port != "53" and _loopback(address) for port, address in addresses
        )
        if not local or len(addresses) < sum(family in ("AF_INET", "AF_INET6") for family in families):
            found.append(line)
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def test_the_trace_check_tells_loopback_and_unix_sockets_from_outbound_traffic() -> None:
    local = [
        '7 connect(6, {sa_family=AF_UNIX, sun_path="/tmp/.s.PGSQL.5432"}, 110) = 0',
        '7 connect(6, {sa_family=AF_INET, sin_port=htons(5432), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        '7 connect(6, {sa_family=AF_INET6, sin6_port=htons(5432), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
        '7 sendto(3, [{nlmsg_len=20, nlmsg_type=RTM_GETADDR}], 20, 0, {sa_family=AF_NETLINK, nl_pid=0, '
        'nl_groups=00000000}, 12) = 20',
        '7 sendto(8, "\\1\\2", 2, MSG_NOSIGNAL, NULL, 0) = 2',
    ]
    dns = '7 connect(8, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.255.255.53")}, 16) = 0'
    local_dns = '7 connect(8, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.53")}, 16) = 0'
    https = ('7 connect(9, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
             'inet_pton(AF_INET6, "2603:1030::5", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>')
    assert outbound("\n".join([*local, dns, local_dns, https])) == [dns, local_dns, https]


def _traced(trace_file: Path) -> list[str]:
    # --seccomp-bpf: only the traced calls stop the process, so the rest runs at full speed
    return [STRACE, "-f", "--seccomp-bpf", "-qq", "-e", f"trace={SYSCALLS}", "-e", "signal=none",
            "-o", str(trace_file)]


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection made to it: the peer and its first bytes."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.1)  # the accept loop's pause: it checks for the end this often
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.requests: list[str] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="proxy listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._done.is_set():
            try:
                connection, peer = self._socket.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1.0)
                try:
                    first = connection.recv(200).decode(errors="replace")
                except OSError:
                    first = ""
            self.requests.append(f"{peer}: {first!r}")

    def close(self) -> None:
        self._done.set()
        self._thread.join(5.0)
        self._socket.close()


@dataclass
class Runs:
    """Where each command's trace is, and what the proxy listener received."""

    logs: Path
    proxy_requests: list[str]

    def assert_local(self, name: str) -> None:
        trace_file = self.logs / f"{name}.strace"
        trace = trace_file.read_text(errors="replace")
        assert "connect(" in trace, f"{trace_file} shows no connect() at all: was {name} traced?"
        assert outbound(trace) == [], f"{name} reached past this machine ({trace_file}):\n" + "\n".join(outbound(trace))


def _store_and_recall_over_stdio(server: ServerProcess) -> None:
    server.initialize("2025-11-25")
    stored = server.tool("store_memory", {"session": SESSION, "content": "The boiler is serviced in October."})
    assert not stored.get("isError"), stored
    recalled = server.tool("recall_memory", {"session": SESSION, "query": "when is the boiler serviced?"})
    assert recalled["structuredContent"]["memories"], recalled


def _store_and_recall_over_http(server: ServerProcess, port: int) -> None:
    server.wait_healthy(port)
    is_error, text, _, _ = http_tool(port, "store_memory", {"session": SESSION, "content": "The bike lock code is 4471."})
    assert not is_error, text
    is_error, text, recalled, _ = http_tool(port, "recall_memory", {"session": SESSION, "query": "bike lock code"})
    assert not is_error and recalled and recalled["memories"], text


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Every command under strace on one fresh data directory; see the module docstring for the order."""
    if not Path(STRACE).exists():
        pytest.fail("strace is not installed (apt-get install strace): tests/test_network.py needs it")
    logs = tmp_path_factory.mktemp("network")
    spawner = Spawner(logs)
    listener = Listener()
    data_dir = spawner.data_dir("fresh")
    spawner.data_dirs.add(data_dir)

    def run(name: str, args: list[str]) -> None:
        done = subprocess.run([*_traced(logs / f"{name}.strace"), MCP_MEMORY, *args], capture_output=True,
                              text=True, timeout=COMMAND_TIMEOUT_S,
                              env=server_env(data_dir, seed_model=False))  # a first start: the child runs
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
        if name == "model-prepare":
            assert "rewriting the embedding model to multiply in int8" in done.stderr  # the quantization child ran

    def start(name: str, args: list[str], **settings: str) -> ServerProcess:
        return spawner.command(data_dir, args, prefix=_traced(logs / f"{name}.strace"), **settings)

    def traffic() -> bool:
        return bool(listener.requests) or any(outbound(trace.read_text(errors="replace"))
                                              for trace in logs.glob("*.strace"))

    try:
        run("model-prepare", ["model", "prepare"])
        port = free_port()
        stdio = start("serve-stdio", ["serve"])
        http = start("serve-http", ["serve", "--transport", "http", "--port", str(port), "--stateless"])
        proxied = start("serve-proxy", ["serve"], **dict.fromkeys(PROXY_VARIABLES, listener.url), NO_PROXY="",
                        no_proxy="")
        _store_and_recall_over_stdio(stdio)
        _store_and_recall_over_http(http, port)
        _store_and_recall_over_stdio(proxied)
        window_ends = time.monotonic() + TELEMETRY_WINDOW_S
        notes = logs / "notes.md"
        notes.write_text("The spare key is under the blue pot.\n\nThe plumber is called Aiko.\n")
        run("doctor", ["doctor"])
        run("export", ["export", "--all", "-o", str(logs / "export.jsonl")])
        run("import", ["import", str(notes), "--session", "s-notes"])
        wait_until(lambda: time.monotonic() >= window_ends or traffic(), TELEMETRY_WINDOW_S + 5.0,
                   "the end of the telemetry window")
        stdio.close_stdin()
        proxied.close_stdin()
        for child in psutil.Process(http.proc.pid).children():  # strace's child: mcp-memory itself
            child.send_signal(signal.SIGTERM)
        for name, server in (("serve-stdio", stdio), ("serve-http", http), ("serve-proxy", proxied)):
            assert server.wait() == 0, f"{name}: {server.stderr[-3000:]}"
        yield Runs(logs, listener.requests)
    finally:
        listener.close()
        spawner.close()


def test_model_prepare_and_its_quantization_child_connect_nowhere(runs: Runs) -> None:
    runs.assert_local("model-prepare")


def test_serve_over_stdio_connects_only_to_loopback_and_unix_sockets(runs: Runs) -> None:
    runs.assert_local("serve-stdio")


def test_serve_over_http_connects_only_to_loopback_and_unix_sockets(runs: Runs) -> None:
    runs.assert_local("serve-http")


@pytest.mark.parametrize("command", ["doctor", "export", "import"])
def test_doctor_export_and_import_connect_only_to_loopback_and_unix_sockets(runs: Runs, command: str) -> None:
    runs.assert_local(command)


def test_a_server_with_every_proxy_variable_set_never_calls_the_proxy(runs: Runs) -> None:
    assert runs.proxy_requests == []
    runs.assert_local("serve-proxy")
