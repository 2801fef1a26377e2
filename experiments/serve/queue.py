"""Evaluations waiting for a worker: highest priority first, then oldest; one entry per verdict key.

The queue holds keys, not candidates (those are in the journal), so a long queue costs little memory.
It is bounded: a new key beyond ``capacity`` is refused, and the server answers 429. A duplicate of a
waiting key takes no room, and raises the waiting entry's priority if it asks for more.
"""

from __future__ import annotations

import heapq
import threading


class PendingQueue:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a queue needs room for at least one evaluation")
        self.capacity = capacity
        self._heap: list[tuple[int, int, str]] = []
        self._entry: dict[str, tuple[int, int]] = {}
        """Each waiting key's live entry, (-priority, seq); older heap entries for it are stale."""
        self._cond = threading.Condition()
        self.closed = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._entry)

    def __contains__(self, key: str) -> bool:
        with self._cond:
            return key in self._entry

    def room(self) -> int:
        with self._cond:
            return self.capacity - len(self._entry)

    def push(self, key: str, priority: int, seq: int, *, force: bool = False) -> bool:
        """Queue ``key``, or raise the priority of its waiting entry. False when it is new and there is no
        room (``force``: queue it all the same, for submissions accepted before a restart)."""
        with self._cond:
            old = self._entry.get(key)
            if old is not None:
                if -priority < old[0]:
                    self._entry[key] = (-priority, old[1])
                    heapq.heappush(self._heap, (-priority, old[1], key))
                return True
            if not force and len(self._entry) >= self.capacity:
                return False
            self._entry[key] = (-priority, seq)
            heapq.heappush(self._heap, (-priority, seq, key))
            self._cond.notify()
            return True

    def wait(self, timeout: float) -> bool:
        """Block until a key waits (True) or ``timeout`` seconds pass or the queue closes (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.closed or bool(self._entry), timeout) and not self.closed

    def pop(self) -> str | None:
        """The most urgent key, or None when none waits or the queue is closed; never blocks."""
        with self._cond:
            if self.closed:
                return None
            while self._heap:
                rank, seq, key = heapq.heappop(self._heap)
                if self._entry.get(key) == (rank, seq):
                    del self._entry[key]
                    return key
            return None

    def close(self) -> None:
        """No more pops: what still waits stays in the journal for the next start."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()
