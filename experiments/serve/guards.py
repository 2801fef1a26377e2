"""What stands between a client and the queue: the bearer token, request body size, and rate limits.

The body limit is a plain ASGI wrapper that reads at most ``max_bytes`` of a request before any route
sees it, so an endless or oversized upload costs the server nothing beyond that. Rate limits are token
buckets per client address: one for requests of any kind, one for candidates submitted (a batch of 50
spends 50).
"""

from __future__ import annotations

import hmac
import json
import math
import threading
import time
from collections import OrderedDict
from typing import Any

Scope = dict[str, Any]


class BodyLimit:
    """Answer 413 to a request whose body is over ``max_bytes`` (by its Content-Length or as it arrives)."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                await _error(send, 400, "Content-Length is not a number")
                return
            if too_big:
                await _error(send, 413, f"the request body is {int(declared):,} bytes; this server takes at "
                                        f"most {self.max_bytes:,}")
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await _error(send, 413, f"the request body is over {self.max_bytes:,} bytes, the most this "
                                        "server takes")
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _error(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def token_ok(expected: str | None, authorization: str | None) -> bool:
    """Whether the ``Authorization`` header carries the server's token (compared in constant time)."""
    if expected is None:
        return True
    if not authorization or not authorization.startswith("Bearer "):
        return False
    return hmac.compare_digest(authorization[len("Bearer "):].strip().encode(), expected.encode())


class RateLimit:
    """Token buckets by client: ``rate`` per second, up to ``burst`` saved. The least recently seen
    clients are forgotten past ``clients``, so a scan of many addresses cannot grow it without end."""

    def __init__(self, rate: float, burst: int, clients: int = 10_000) -> None:
        self.rate = rate
        self.burst = burst
        self.clients = clients
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self.lock = threading.Lock()

    def take(self, client: str, amount: int = 1, now: float | None = None) -> float:
        """0 when ``amount`` may pass now (and spend it), else the seconds until it could."""
        now = time.monotonic() if now is None else now
        with self.lock:
            tokens, last = self.buckets.pop(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if amount > self.burst:
                wait = math.inf
            elif tokens >= amount:
                tokens -= amount
                wait = 0.0
            else:
                wait = (amount - tokens) / self.rate
            self.buckets[client] = (tokens, now)
            while len(self.buckets) > self.clients:
                self.buckets.popitem(last=False)
        return wait
