"""Clients for ``warpgym serve``, sync (``ServeClient``) and async (``AsyncServeClient``), on httpx.

    with ServeClient("http://127.0.0.1:8765") as client:
        verdict = client.evaluate("normalization/softmax", source)          # the EvalResult as a dict
        verdicts = client.evaluate_many([item("math/add", a), item("math/add", b)])   # in order

A full queue (429) or a server shutting down (503) is waited out as the server's Retry-After says, up
to ``busy_timeout_s``; a stream cut by a restart is picked up again, since the server keeps every
accepted submission. Batches are cut by count (``batch``) and by encoded size (``batch_bytes``, below the
server's request body limit); a batch the server still finds too large (413) is halved and sent again,
and a submission refused alone for its size gets a verdict of its own that says so (``refused_verdict``)
while the others are judged. Only httpx is imported here: a trainer process need not load the judge.
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
BATCH_BYTES = 8 << 20
"""The most bytes of one batch request: half the server's default body limit (``--max-body-mb`` 16)."""
JSON_HEADERS = {"Content-Type": "application/json"}
TOO_LARGE = 413


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


def _encoded(one: dict[str, Any]) -> bytes:
    """One submission as the request body carries it (UTF-8; escaped where a lone surrogate would not
    encode)."""
    try:
        return json.dumps(one, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(one, separators=(",", ":")).encode()


def _body(encoded: list[bytes]) -> bytes:
    return b'{"items":[' + b",".join(encoded) + b"]}"


def _chunks(encoded: list[bytes], count: int, max_bytes: int) -> Iterator[list[int]]:
    """Indices of consecutive submissions, at most ``count`` of them and ``max_bytes`` of body per chunk (a
    submission larger than that alone goes alone)."""
    chunk: list[int] = []
    size = len(_body([]))
    for i, one in enumerate(encoded):
        if chunk and (len(chunk) >= count or size + len(one) + 1 > max_bytes):
            yield chunk
            chunk, size = [], len(_body([]))
        chunk.append(i)
        size += len(one) + 1
    if chunk:
        yield chunk


def refused_row(error: ServeError) -> dict[str, Any]:
    """``submit_batch``'s answer for a submission the server refused for its size: no id, never judged."""
    return {"id": None, "state": "refused", "cached": False, "status": error.status, "error": str(error)}


def refused_verdict(one: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """A verdict (``EvalResult.to_dict``'s fields) for a submission the server refused: not correct, with
    a ``too-large`` violation that says why; a reward scores it as ``env.step`` scores a refused source."""
    message = f"the server refused this submission, so nothing was judged: {row['error']}"
    return {"task": one.get("task", ""), "target": (one.get("options") or {}).get("target", ""),
            "device": "", "stage": "static", "compiled": False, "correct": False,
            "violations": [{"code": "too-large", "message": message, "line": None}],
            "runtime_error": message, "feedback": f"Verdict: REJECTED (too-large)\n- {message}"}


class _Base:
    def __init__(self, url: str, token: str | None, timeout: float, busy_timeout_s: float,
                 batch: int, batch_bytes: int) -> None:
        self.url = url.rstrip("/")
        self.headers = _headers(token)
        self.timeout = timeout
        self.busy_timeout_s = busy_timeout_s
        self.batch = batch
        self.batch_bytes = batch_bytes

    @staticmethod
    def _verdicts(items: list[dict[str, Any]], rows: list[dict[str, Any]], results: dict[str, Any]
                  ) -> list[dict[str, Any]]:
        return [results[row["id"]] if row["id"] is not None else refused_verdict(one, row)
                for one, row in zip(items, rows, strict=True)]


class ServeClient(_Base):
    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 60.0,
                 busy_timeout_s: float = 600.0, batch: int = 256, batch_bytes: int = BATCH_BYTES,
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(url, token, timeout, busy_timeout_s, batch, batch_bytes)
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
        """``{id, state, cached}`` per submission, in order; one the server refused for its size is
        ``refused_row`` (``id`` None) and the others are submitted all the same."""
        encoded = [_encoded(one) for one in items]
        out: list[dict[str, Any]] = []
        for chunk in _chunks(encoded, self.batch, self.batch_bytes):
            out.extend(self._submit_chunk([encoded[i] for i in chunk]))
        return out

    def _submit_chunk(self, encoded: list[bytes]) -> list[dict[str, Any]]:
        try:
            return self._send("POST", "/v1/batches", content=_body(encoded), headers=JSON_HEADERS)["items"]
        except ServeError as exc:
            if exc.status != TOO_LARGE:
                raise
            if len(encoded) == 1:
                return [refused_row(exc)]
        half = len(encoded) // 2
        return self._submit_chunk(encoded[:half]) + self._submit_chunk(encoded[half:])

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
        """Verdicts for ``items`` (see ``item``), in their order; one the server refused for its size is
        ``refused_verdict``."""
        rows = self.submit_batch(items)
        results = self.wait([r["id"] for r in rows if r["id"] is not None], timeout_s)
        return self._verdicts(items, rows, results)


class AsyncServeClient(_Base):
    """``ServeClient`` for asyncio code: the same methods, awaited."""

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 60.0,
                 busy_timeout_s: float = 600.0, batch: int = 256, batch_bytes: int = BATCH_BYTES,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(url, token, timeout, busy_timeout_s, batch, batch_bytes)
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
        encoded = [_encoded(one) for one in items]
        out: list[dict[str, Any]] = []
        for chunk in _chunks(encoded, self.batch, self.batch_bytes):
            out.extend(await self._submit_chunk([encoded[i] for i in chunk]))
        return out

    async def _submit_chunk(self, encoded: list[bytes]) -> list[dict[str, Any]]:
        try:
            return (await self._send("POST", "/v1/batches", content=_body(encoded),
                                     headers=JSON_HEADERS))["items"]
        except ServeError as exc:
            if exc.status != TOO_LARGE:
                raise
            if len(encoded) == 1:
                return [refused_row(exc)]
        half = len(encoded) // 2
        return await self._submit_chunk(encoded[:half]) + await self._submit_chunk(encoded[half:])

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
        rows = await self.submit_batch(items)
        results = await self.wait([r["id"] for r in rows if r["id"] is not None], timeout_s)
        return self._verdicts(items, rows, results)
