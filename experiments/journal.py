"""The answer journal: every model answer is stored the moment it arrives, and served again when the
same episode sends the same request at the same turn (a resumed episode), so no answer is paid for
twice, even with the provider's response cache turned off. The same request at another turn (a loop
drawing several independent answers) is a new call.

An answer served again keeps its ``origin`` and cost: it is the one use of the call it came from (whose
turn was not stored), not a second call."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from warpgym.agents import Completion, Provider

    from .store import Store


class Ledger(Protocol):
    """What the journal reports to: the run's stop switch and its accounts."""

    def check_stop(self) -> None:
        """Raise to refuse a new call (the run is stopping)."""

    def charge(self, completion: Completion) -> None:
        """Count a call that was just answered."""

    def reused(self) -> None:
        """Count an answer served from the journal."""


def request_key(messages: list[dict[str, Any]], params: dict[str, Any], turn: int | None = None) -> str:
    """The request's identity within an episode; without ``turn``, the key journals written before the
    turn was part of it hold."""
    request: dict[str, Any] = {"messages": messages, "params": params}
    if turn is not None:
        request["turn"] = turn
    blob = json.dumps(request, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class JournalProvider:
    """Wraps a provider for one episode: answers are journaled in the store as they arrive and
    re-used when the same request comes again; no call starts once the run is stopping."""

    def __init__(self, inner: Provider, store: Store, episode_id: int, ledger: Ledger) -> None:
        self.inner = inner
        self.store = store
        self.episode_id = episode_id
        self.ledger = ledger
        self.name = getattr(inner, "name", "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _before(
        self, messages: list[dict[str, Any]], params: dict[str, Any], metadata: dict[str, Any] | None
    ) -> tuple[str, Completion | None]:
        from warpgym.agents import Completion

        key = request_key(messages, params, (metadata or {}).get("turn"))
        hit = self.store.find_call(self.episode_id, key)
        if hit is None:
            hit = self.store.find_call(self.episode_id, request_key(messages, params))
        if hit is not None:
            self.ledger.reused()
            return key, Completion.from_dict(hit)
        self.ledger.check_stop()
        return key, None

    def _after(self, key: str, metadata: dict[str, Any] | None, completion: Completion) -> Completion:
        turn = (metadata or {}).get("turn")
        self.store.add_call(self.episode_id, key, turn, metadata, completion.to_dict())
        self.ledger.charge(completion)
        return completion

    def complete(
        self, messages: list[dict[str, Any]], *, metadata: dict[str, Any] | None = None, **params: Any
    ) -> Completion:
        key, hit = self._before(messages, params, metadata)
        if hit is not None:
            return hit
        return self._after(key, metadata, self.inner.complete(messages, metadata=metadata, **params))

    async def acomplete(
        self, messages: list[dict[str, Any]], *, metadata: dict[str, Any] | None = None, **params: Any
    ) -> Completion:
        key, hit = self._before(messages, params, metadata)
        if hit is not None:
            return hit
        return self._after(key, metadata, await self.inner.acomplete(messages, metadata=metadata, **params))
