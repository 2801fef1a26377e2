"""Expected outputs, computed by the judge in high precision and kept for the next candidate of the task.

Shared by every evaluation of one evaluator, from any thread: the caches here lock around each use.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import torch
from warpgym.env.common.bits import raw_bytes
from warpgym.tasks import Sampler, Task
from warpgym.tasks.spec import dtype_of, sequence

REFERENCE_CACHE_BYTES = 256 << 20
"""Reference answers up to this size are kept for the next candidate of the same task (dev and
heldout cases); bench-sized ones are computed per evaluation instead of pinning gigabytes."""

_K = TypeVar("_K")
_V = TypeVar("_V")


class Memo(Generic[_K, _V]):
    """A bounded, least-recently-used map that several threads may share."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[_K, _V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _K) -> _V | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: _K, value: _V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


Reference = tuple[list[Any], list[Any]]
"""Expected outputs (high precision) and their expected shapes and dtypes (meta tensors)."""


def upcast(value: Any, precision: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(precision)
    return value


def itemsize(t: Any) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def output_meta(task: Task, inputs: dict[str, Any], case: dict[str, Any] | None = None) -> list[Any]:
    """The reference's outputs for ``inputs`` (of ``case``) as meta tensors (shapes and dtypes, no data)."""
    reference = task.reference if case is None else task.reference_of(case)
    try:
        return list(sequence(reference(**{k: v.to("meta") if isinstance(v, torch.Tensor) else v
                                          for k, v in inputs.items()})))
    except Exception:  # noqa: BLE001 - some ops have no meta kernel; run at the real dtype instead
        outputs = sequence(reference(**inputs))
        return [o.to("meta") if isinstance(o, torch.Tensor) else o for o in outputs]


class References:
    """The reference answers of one device's evaluations."""

    def __init__(self, device: str, size: int = 16) -> None:
        self.device = device
        self.memo: Memo[tuple[Any, ...], Reference] = Memo(size)

    def get(self, task: Task, case: dict[str, Any], seed: int, dist: str,
            gpu_shared: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
            *, role: int | None = None, salt: int = 0) -> Reference:
        """The answers for the inputs ``Sampler(seed, dist, role=role, salt=salt)`` draws: an evaluation
        passes the seed it derived for the role (judge/seeds.py), and the key holds all three."""
        key = (task.id, tuple(sorted(case.items())), seed, role, salt, dist, self.device)
        kept = self.memo.get(key)
        if kept is not None:
            return kept
        inputs = task.make_inputs(case, Sampler(seed, dist, self.device, role=role, salt=salt))
        reference = task.reference_of(case)
        meta = output_meta(task, inputs, case)
        precision = dtype_of(task.reference_precision)
        with torch.no_grad(), gpu_shared():
            expected = list(sequence(reference(**{k: upcast(v, precision) for k, v in inputs.items()})))
        if sum(itemsize(t) for t in expected) <= REFERENCE_CACHE_BYTES:
            self.memo.put(key, (expected, meta))  # bench-sized answers are used once: not kept
        return expected, meta


def digest(outputs: list[Any]) -> str:
    """A hash of outputs' dtypes, shapes and bits: equal digests, equal outputs."""
    h = hashlib.blake2b(digest_size=16)
    for o in outputs:
        if isinstance(o, torch.Tensor):
            t = o.detach().to("cpu")
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(raw_bytes(t).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(o).encode())
    return h.hexdigest()
