"""Writers that store unique memories over HTTP with idempotency keys until they are acknowledged.

Each writer (a thread with its own httpx client) stores ``Writer <n> note <count>: parcel <hex>
left the depot`` in session ``<prefix>-<n % sessions>`` with a fresh idempotency key, and retries
the same write with the same key on any connection error or "unavailable" tool error until it is
acknowledged. Given several URLs (servers on one database, as behind a load balancer), writer n
starts on ``urls[n % len(urls)]`` and moves to the next URL after each failed attempt, so a write
cut off by a dead server is acknowledged by another one.

Used by tests/kill9.py (one server, SIGKILLed and restarted) and tests/test_scale_out.py (several
servers, one SIGKILLed). Every wait is bounded; nothing in mcp_memory is imported.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
           "mcp-protocol-version": "2025-06-18"}


@dataclass
class Write:
    """One write: what was sent, every memory_id an attempt was answered with, and by which URLs."""

    session: str
    key: str
    content: str
    ids: set[str] = field(default_factory=set)
    acknowledged_by: list[str] = field(default_factory=list)


def store(client: httpx.Client, url: str, arguments: dict[str, Any], errors: list[str]) -> dict[str, Any] | None:
    """One ``store_memory`` call to a ``--stateless`` server: its structured result, or None when it
    should be retried (refused, cut off, or "unavailable"); any other tool error is appended to ``errors``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "store_memory", "arguments": arguments}}
    try:
        message = client.post(url, json=body, headers=HEADERS).json()
    except (httpx.HTTPError, json.JSONDecodeError):
        return None  # refused, reset, or cut off mid-reply by a kill
    result = message.get("result") or {}
    if result.get("isError") or "error" in message:
        text = json.dumps(message)[:300]
        if "unavailable" not in text and "retry" not in text:
            errors.append(text)
        return None
    return result.get("structuredContent")


class Writers:
    """``count`` writer threads over ``urls``; ``start()``, then ``stop()``. Tallies are read under ``lock``."""

    def __init__(self, urls: list[str], count: int, *, sessions: int = 2, prefix: str = "kill9", seed: int = 0,
                 give_up_s: float = 360.0) -> None:
        self.urls, self.count, self.sessions, self.prefix = urls, count, sessions, prefix
        self.give_up_s = give_up_s
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.writes: list[Write] = []
        self.errors: list[str] = []  # tool errors that were not "retry later"
        self.acknowledged = 0
        self.retries = 0  # attempts after the first, over all writes
        self.replays = 0  # acknowledgements that said replayed=true (the first reply was lost)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._writer, args=(n,), daemon=True) for n in range(count)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout_s: float) -> None:
        """Let every write in flight be acknowledged (or given up after ``give_up_s``), then end the threads."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)

    def acknowledged_by(self, url: str) -> int:
        """How many writes ``url`` acknowledged."""
        with self.lock:
            return sum(write.acknowledged_by.count(url) for write in self.writes)

    def _writer(self, number: int) -> None:
        pause = threading.Event()
        place = number % len(self.urls)
        with httpx.Client(timeout=30.0) as client:
            count = 0
            while not self._stop.is_set():
                count += 1
                with self.lock:
                    write = Write(f"{self.prefix}-{number % self.sessions}",
                                  f"w{number}-{count}-{self.random.getrandbits(32):08x}",
                                  f"Writer {number} note {count}: parcel {self.random.getrandbits(48):012x} left the depot")
                    self.writes.append(write)
                attempts = 0
                deadline = time.monotonic() + self.give_up_s
                while time.monotonic() < deadline:
                    attempts += 1
                    url = self.urls[place]
                    result = store(client, url, {"session": write.session, "content": write.content,
                                                 "idempotency_key": write.key}, self.errors)
                    if result is not None:
                        with self.lock:
                            write.ids.add(result["memory_id"])
                            write.acknowledged_by.append(url)
                            self.acknowledged += 1
                            self.replays += bool(result.get("replayed"))
                        break
                    place = (place + 1) % len(self.urls)  # as a load balancer fails over
                    pause.wait(0.05)  # the server is down or restarting: try again shortly
                with self.lock:
                    self.retries += attempts - 1
