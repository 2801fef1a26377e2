"""Retrying model calls: transient failures only, exponential backoff with jitter, and the server's
Retry-After when it gives one.

Transient: rate limits (429), request timeouts (408), server errors (5xx, Anthropic's 529
"overloaded" included), timeouts and connection errors. Any other 4xx (a bad request, a wrong key,
a prompt over the context length) fails at once: retrying cannot fix it and would only spend
time. The SDKs' own retries are switched off so this is the one policy in force.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import tenacity

log = logging.getLogger("warpgym.agents")
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` counts the first try. Waits grow ``initial * 2**n`` up to ``max_wait``, plus up
    to ``jitter`` seconds at random; a Retry-After from the server replaces the computed wait (capped at
    ``max_retry_after``, so a server asking for an hour does not stall a run)."""

    max_attempts: int = 6
    initial: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    max_retry_after: float = 300.0


def status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if code is None:
        code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


def is_transient(exc: BaseException, transient_types: tuple[type[BaseException], ...] = ()) -> bool:
    code = status_code(exc)
    if code is not None:
        return code in (408, 429) or code >= 500
    return isinstance(exc, transient_types + (TimeoutError, ConnectionError))


def retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(parsed.timestamp() - time.time(), 0.0) if parsed else None


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after_s(exc)
        if asked is not None:
            return min(asked, policy.max_retry_after)
        backoff = min(policy.initial * (2 ** (state.attempt_number - 1)), policy.max_wait)
        return backoff + random.uniform(0, policy.jitter)

    return wait


def _before_sleep(name: str) -> Callable[[tenacity.RetryCallState], None]:
    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("%s: attempt %d failed (%s: %s); retrying in %.2f s", name, state.attempt_number,
                    type(exc).__name__, str(exc)[:200], wait)

    return before_sleep


def _kwargs(policy: RetryPolicy, transient: tuple[type[BaseException], ...], name: str) -> dict[str, Any]:
    return {
        "stop": tenacity.stop_after_attempt(max(policy.max_attempts, 1)),
        "wait": _wait(policy),
        "retry": tenacity.retry_if_exception(lambda e: is_transient(e, transient)),
        "before_sleep": _before_sleep(name),
        "reraise": True,
    }


def call_with_retry(fn: Callable[[], T], policy: RetryPolicy, transient: tuple[type[BaseException], ...] = (),
                    name: str = "provider") -> tuple[T, int]:
    """(result, number of retries it took)."""
    retrying = tenacity.Retrying(**_kwargs(policy, transient, name))
    result = retrying(fn)
    return result, retrying.statistics.get("attempt_number", 1) - 1


async def acall_with_retry(fn: Callable[[], Awaitable[T]], policy: RetryPolicy,
                           transient: tuple[type[BaseException], ...] = (),
                           name: str = "provider") -> tuple[T, int]:
    async def attempt() -> T:  # a coroutine function, so tenacity awaits each attempt
        return await fn()

    retrying = tenacity.AsyncRetrying(**_kwargs(policy, transient, name))
    result = await retrying(attempt)
    return result, retrying.statistics.get("attempt_number", 1) - 1
