"""Clients for ``warpgym serve``, sync (``ServeClient``) and async (``AsyncServeClient``), on httpx.

    with ServeClient("http://127.0.0.1:8765") as client:
        verdict = client.evaluate("normalization/softmax", source)          # the EvalResult as a dict
        verdicts = client.evaluate_many([item("math/add", a), item("math/add", b)])   # in order

A full queue (429) or a server shutting down (503) is waited out as the server's Retry-After says, up
to ``busy_timeout_s``; a stream cut by a restart is picked up again, since the server keeps every
accepted submission. Only httpx is imported here: a trainer process need not load the judge.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from .settings import TOKEN_ENV

DEFAULT_URL = "http://127.0.0.1:8765"
RETRY_STATUSES = (429, 503)


class ServeError(RuntimeError):
    """The server refused a request (``status``: the HTTP code) or could not be reached (``status`` None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def item(task: str, source: str, *, attachments: dict[str, str] | None = None,
         options: dict[str, Any] | None = None, priority: int = 0) -> dict[str, Any]:
    """One submission as the API takes it (``options``: shape_sets, timing, target, timeouts, ...)."""
    out: dict[str, Any] = {"task": task, "source": source, "priority": priority}
    if attachments:
        out["attachments"] = dict(attachments)
    if options:
        out["options"] = dict(options)
    return out


def _headers(token: str | None) -> dict[str, str]:
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.1, float(response.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


def _check(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            message = response.json().get("error") or response.text
        except (ValueError, AttributeError):
            message = response.text
        raise ServeError(f"{response.status_code}: {message}", response.status_code)
    return response.json()


def _chunks(items: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class _Base:
    def __init__(self, url: str, token: str | None, timeout: float, busy_timeout_s: float,
                 batch: int) -> None:
        self.url = url.rstrip("/")
        self.headers = _headers(token)
        self.timeout = timeout
        self.busy_timeout_s = busy_timeout_s
        self.batch = batch


class ServeClient(_Base):
    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 60.0,
                 busy_timeout_s: float = 600.0, batch: int = 256, transport: httpx.BaseTransport | None = None
                 ) -> None:
        super().__init__(url, token, timeout, busy_timeout_s, batch)
        self.http = httpx.Client(base_url=self.url, headers=self.headers, timeout=timeout,
                                 transport=transport)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> ServeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request, waiting out 429/503 (and a server not up yet) until ``busy_timeout_s``."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if time.monotonic() > deadline:
                    raise ServeError(f"cannot reach {self.url}: {exc}") from None
                time.sleep(1.0)
                continue
            if response.status_code in RETRY_STATUSES and time.monotonic() < deadline:
                time.sleep(min(_retry_after(response), max(0.1, deadline - time.monotonic())))
                continue
            return _check(response)

    def health(self) -> dict[str, Any]:
        return _check(self.http.get("/health"))

    def metrics(self) -> str:
        response = self.http.get("/metrics")
        if response.status_code >= 400:
            _check(response)
        return response.text

    def submit(self, task: str, source: str, **kwargs: Any) -> dict[str, Any]:
        """``{id, state, cached}`` for one submission (``kwargs`` as for ``item``)."""
        return self._send("POST", "/v1/evaluations", json=item(task, source, **kwargs))

    def submit_batch(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for chunk in _chunks(items, self.batch):
            out.extend(self._send("POST", "/v1/batches", json={"items": chunk})["items"])
        return out

    def result(self, submission_id: str, wait: float = 0.0) -> dict[str, Any]:
        return self._send("GET", f"/v1/evaluations/{submission_id}", params={"wait": wait})

    def stream(self, ids: list[str]) -> Iterator[dict[str, Any]]:
        """Each submission's row (with its ``result``) as it is answered; ends early if the server stops."""
        with self.http.stream("POST", "/v1/stream", json={"ids": ids}, timeout=httpx.Timeout(
                self.timeout, read=None)) as response:
            if response.status_code >= 400:
                response.read()
                _check(response)
            for raw in response.iter_lines():
                if raw.strip():
                    message = json.loads(raw)
                    if "id" in message:
                        yield message

    def wait(self, ids: list[str], timeout_s: float | None = None) -> dict[str, dict[str, Any]]:
        """Every id's verdict, through streams; a stream cut by a restart is opened again."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        results: dict[str, dict[str, Any]] = {}
        while len(results) < len(set(ids)):
            pending = [i for i in dict.fromkeys(ids) if i not in results]
            try:
                for row in self.stream(pending):
                    results[row["id"]] = row["result"]
            except (httpx.TransportError, ServeError) as exc:
                if isinstance(exc, ServeError) and exc.status not in RETRY_STATUSES:
                    raise
                time.sleep(1.0)
            if deadline is not None and time.monotonic() > deadline and len(results) < len(set(ids)):
                missing = len(set(ids)) - len(results)
                raise ServeError(f"{missing} verdict(s) not ready within {timeout_s:g} s")
            if len(results) < len(set(ids)):
                time.sleep(0.2)
        return results

    def evaluate(self, task: str, source: str, **kwargs: Any) -> dict[str, Any]:
        """The verdict (an ``EvalResult`` as a dict) on one candidate."""
        return self.evaluate_many([item(task, source, **kwargs)])[0]

    def evaluate_many(self, items: list[dict[str, Any]], timeout_s: float | None = None
                      ) -> list[dict[str, Any]]:
        """Verdicts for ``items`` (see ``item``), in their order."""
        ids = [a["id"] for a in self.submit_batch(items)]
        results = self.wait(ids, timeout_s)
        return [results[i] for i in ids]


class AsyncServeClient(_Base):
    """``ServeClient`` for asyncio code: the same methods, awaited."""

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 60.0,
                 busy_timeout_s: float = 600.0, batch: int = 256,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(url, token, timeout, busy_timeout_s, batch)
        self.http = httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=timeout,
                                      transport=transport)

    async def close(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncServeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                response = await self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if time.monotonic() > deadline:
                    raise ServeError(f"cannot reach {self.url}: {exc}") from None
                await asyncio.sleep(1.0)
                continue
            if response.status_code in RETRY_STATUSES and time.monotonic() < deadline:
                await asyncio.sleep(min(_retry_after(response), max(0.1, deadline - time.monotonic())))
                continue
            return _check(response)

    async def health(self) -> dict[str, Any]:
        return _check(await self.http.get("/health"))

    async def submit(self, task: str, source: str, **kwargs: Any) -> dict[str, Any]:
        return await self._send("POST", "/v1/evaluations", json=item(task, source, **kwargs))

    async def submit_batch(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for chunk in _chunks(items, self.batch):
            out.extend((await self._send("POST", "/v1/batches", json={"items": chunk}))["items"])
        return out

    async def result(self, submission_id: str, wait: float = 0.0) -> dict[str, Any]:
        return await self._send("GET", f"/v1/evaluations/{submission_id}", params={"wait": wait})

    async def stream(self, ids: list[str]) -> AsyncIterator[dict[str, Any]]:
        async with self.http.stream("POST", "/v1/stream", json={"ids": ids}, timeout=httpx.Timeout(
                self.timeout, read=None)) as response:
            if response.status_code >= 400:
                await response.aread()
                _check(response)
            async for raw in response.aiter_lines():
                if raw.strip():
                    message = json.loads(raw)
                    if "id" in message:
                        yield message

    async def wait(self, ids: list[str], timeout_s: float | None = None) -> dict[str, dict[str, Any]]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        results: dict[str, dict[str, Any]] = {}
        while len(results) < len(set(ids)):
            pending = [i for i in dict.fromkeys(ids) if i not in results]
            try:
                async for row in self.stream(pending):
                    results[row["id"]] = row["result"]
            except (httpx.TransportError, ServeError) as exc:
                if isinstance(exc, ServeError) and exc.status not in RETRY_STATUSES:
                    raise
                await asyncio.sleep(1.0)
            if deadline is not None and time.monotonic() > deadline and len(results) < len(set(ids)):
                missing = len(set(ids)) - len(results)
                raise ServeError(f"{missing} verdict(s) not ready within {timeout_s:g} s")
            if len(results) < len(set(ids)):
                await asyncio.sleep(0.2)
        return results

    async def evaluate(self, task: str, source: str, **kwargs: Any) -> dict[str, Any]:
        return (await self.evaluate_many([item(task, source, **kwargs)]))[0]

    async def evaluate_many(self, items: list[dict[str, Any]], timeout_s: float | None = None
                            ) -> list[dict[str, Any]]:
        ids = [a["id"] for a in await self.submit_batch(items)]
        results = await self.wait(ids, timeout_s)
        return [results[i] for i in ids]
