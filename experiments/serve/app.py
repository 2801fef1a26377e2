"""The HTTP API (FastAPI) over an ``EvalService``.

    POST /v1/evaluations          one submission              -> {id, state, cached} (200 done, 202 queued)
    POST /v1/batches              {"items": [submission, ...]} -> {"items": [{id, state, cached}, ...]}
    GET  /v1/evaluations/{id}     ?wait=S waits up to S s      -> {id, state, ..., result once done}
    POST /v1/stream               {"ids": [...]}               -> NDJSON, one line per result as it is ready
    GET  /health                  no token needed              -> {status, workers, queued, ...}
    GET  /metrics                 Prometheus text

Every error is JSON ``{"error": message}`` with a 4xx code (5xx only for the server's own faults); a
429 or 503 carries ``Retry-After``. Verdicts are written as Python's json writes them: a NaN error
figure is ``NaN``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.exceptions import HTTPException

from warpgym import __version__

from .guards import BodyLimit, RateLimit, token_ok
from .models import Batch, Ids, Submission
from .service import EvalService, Refused
from .settings import Settings

HEARTBEAT_S = 15.0
"""A stream says it is still waiting at least this often, so proxies and clients do not time it out."""


class VerdictJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=str, separators=(",", ":")).encode()


class Waiters:
    """Carries the dispatch threads' news into the event loop: one asyncio queue per waiting request."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.by_id: dict[str, set[asyncio.Queue[str | None]]] = defaultdict(set)
        self.every: set[asyncio.Queue[str | None]] = set()

    def listener(self, ids: list[str] | None) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._deliver, ids)

    def _deliver(self, ids: list[str] | None) -> None:
        if ids is None:
            for q in self.every:
                q.put_nowait(None)
            return
        for i in ids:
            for q in self.by_id.get(i, ()):
                q.put_nowait(i)

    @contextlib.contextmanager
    def watching(self, ids: list[str]) -> Any:
        q: asyncio.Queue[str | None] = asyncio.Queue()
        self.every.add(q)
        for i in ids:
            self.by_id[i].add(q)
        try:
            yield q
        finally:
            self.every.discard(q)
            for i in ids:
                self.by_id[i].discard(q)
                if not self.by_id[i]:
                    del self.by_id[i]


def _error(status: int, message: str, retry_after: float | None = None, **headers: str) -> JSONResponse:
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        if err.get("type") == "json_invalid":
            return f"the request body is not valid JSON ({err.get('ctx', {}).get('error', 'cannot parse')})"
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg", "invalid")))
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def create_app(service: EvalService, settings: Settings) -> Any:
    """The ASGI application: the routes, behind the body-size limit."""
    waiters = Waiters()
    requests = RateLimit(settings.requests_per_s, settings.request_burst)
    candidates = RateLimit(settings.submissions_per_s, settings.submission_burst)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        waiters.loop = asyncio.get_running_loop()
        service.listen(waiters.listener)
        yield

    app = FastAPI(title="warpgym serve", version=__version__, lifespan=lifespan, docs_url=None,
                  redoc_url=None, openapi_url=None, default_response_class=VerdictJSON)

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return _error(exc.status, exc.message, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        service.telemetry.count("warpgym_serve_rejected_total", reason="invalid")
        return _error(422, _validation_message(exc))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), **(exc.headers or {}))

    def client_of(request: Request) -> str:
        return request.client.host if request.client else "unknown"

    def guard(request: Request) -> None:
        if not token_ok(settings.token, request.headers.get("authorization")):
            service.telemetry.count("warpgym_serve_rejected_total", reason="unauthorized")
            raise HTTPException(401, "a bearer token is required (Authorization: Bearer ...)",
                                headers={"WWW-Authenticate": "Bearer"})
        wait = requests.take(client_of(request))
        if wait:
            service.telemetry.count("warpgym_serve_rejected_total", reason="rate")
            raise Refused(429, f"too many requests from {client_of(request)}; at most "
                               f"{settings.requests_per_s:g} a second", retry_after=wait)

    def spend(request: Request, count: int) -> None:
        if count > settings.max_batch:
            raise Refused(413, f"a batch of {count} submissions; this server takes at most "
                               f"{settings.max_batch} at once")
        wait = candidates.take(client_of(request), count)
        if wait:
            service.telemetry.count("warpgym_serve_rejected_total", reason="rate")
            raise Refused(429, f"too many submissions from {client_of(request)}; at most "
                               f"{settings.submissions_per_s:g} candidates a second", retry_after=wait)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {**service.status(), "version": __version__}

    @app.get("/metrics", dependencies=[Depends(guard)])
    def metrics() -> PlainTextResponse:
        return PlainTextResponse(service.metrics_text(), media_type="text/plain; version=0.0.4")

    @app.post("/v1/evaluations", dependencies=[Depends(guard)])
    def submit(sub: Submission, request: Request) -> JSONResponse:
        spend(request, 1)
        answer = service.submit([sub])[0]
        return VerdictJSON(answer, status_code=200 if answer["state"] == "done" else 202)

    @app.post("/v1/batches", dependencies=[Depends(guard)], status_code=202)
    def submit_batch(batch: Batch, request: Request) -> dict[str, Any]:
        spend(request, len(batch.items))
        return {"items": service.submit(list(batch.items))}

    @app.get("/v1/evaluations/{submission_id}", dependencies=[Depends(guard)])
    async def result(submission_id: str, wait: float = 0.0) -> dict[str, Any]:
        if not (0 <= wait <= settings.max_wait_s):
            raise Refused(422, f"wait = {wait:g}; use 0 to {settings.max_wait_s:g} seconds")
        with waiters.watching([submission_id]) as q:
            row = service.get(submission_id)
            if row is None:
                raise Refused(404, f"no submission {submission_id!r} on this server")
            if row["state"] != "done" and wait > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(q.get(), timeout=wait)
                row = service.get(submission_id) or row
        return row

    @app.post("/v1/stream", dependencies=[Depends(guard)])
    async def stream(body: Ids) -> StreamingResponse:
        ids = list(dict.fromkeys(body.ids))
        states = service.states(ids)
        unknown = [i for i in ids if i not in states]
        if unknown:
            raise Refused(404, f"no submission {unknown[0]!r} on this server"
                               + (f" (and {len(unknown) - 1} more unknown ids)" if len(unknown) > 1 else ""))
        return StreamingResponse(_lines(ids), media_type="application/x-ndjson")

    async def _lines(ids: list[str]) -> AsyncIterator[bytes]:
        def line(item: dict[str, Any]) -> bytes:
            return (json.dumps(item, default=str) + "\n").encode()

        with waiters.watching(ids) as q:
            pending = list(ids)
            while pending:
                states = service.states(pending)
                for i in [i for i in pending if states.get(i) == "done"]:
                    row = service.get(i)
                    if row is not None:
                        pending.remove(i)
                        yield line(row)
                if not pending:
                    return
                stuck = all(states.get(i) == "queued" for i in pending)
                if service.cancelled or (service.draining and stuck):
                    yield line({"event": "shutdown", "pending": pending,
                                "message": "the server is stopping; these stay queued and are answered after "
                                           "it restarts"})
                    return
                try:
                    await asyncio.wait_for(q.get(), timeout=HEARTBEAT_S)
                except asyncio.TimeoutError:
                    yield line({"event": "waiting", "pending": len(pending)})

    return BodyLimit(app, settings.max_body_bytes)
