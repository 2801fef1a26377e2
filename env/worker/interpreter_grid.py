"""Two checks the Triton interpreter's sequential launch would otherwise hide, installed in a CPU worker.

- **Program order.** The interpreter runs a grid's programs in order, so a program that writes one
  element into its neighbour's tile (a mask off by one) is overwritten by the neighbour that runs next,
  and the damage never shows; on a GPU the two race. Here every grid axis runs its odd indices
  descending, then its even indices ascending: with three programs or more, a stray write into either
  neighbour survives in some tiles (with two, a write into the next one does). Every
  program still runs exactly once, so a kernel whose programs are independent (what a GPU requires)
  computes the same result.
- **Memory bounds.** Every active lane of a load, store or atomic must address bytes inside the storage
  of a tensor passed to that launch. A read or write past the end of a tensor lands in whatever the
  process holds next to it on the CPU, silently; compute-sanitizer would flag it on a GPU. A load from
  an input the worker placed inside a guard buffer (``guard``) is bounded by the input's own bytes, not
  the buffer's: a read of the guard is out of bounds even where the lanes it fed are never stored. A
  store into the guard is let through, so the worker's guard check names the input it overran.

Both wrap the interpreter's one builder object; a Triton without it gets neither check, never a false
rejection.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np

_EXTENTS: list[list[tuple[int, int, int, int]]] = []
"""The byte ranges of the tensors of each launch being interpreted (nested launches stack): (start, end)
a load may read, then (start, end) a store may write."""


_GUARDED: dict[int, tuple[weakref.ref[Any], int, int]] = {}
"""Guard buffers by storage address: (the buffer, while alive; the input's first and end byte)."""


def guard(buffer: Any, inner: Any) -> None:
    """``inner``, a view in the middle of ``buffer``, is the input the launch may address: not the rest.
    The entry goes with the buffer (its address may then hold anything)."""
    address, start = buffer.untyped_storage().data_ptr(), inner.data_ptr()

    def forget(ref: weakref.ref[Any]) -> None:
        if _GUARDED.get(address, (None,))[0] is ref:
            del _GUARDED[address]

    _GUARDED[address] = (weakref.ref(buffer, forget), start, start + inner.numel() * inner.element_size())


def _bounds(storage: Any) -> tuple[int, int, int, int]:
    start, end = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
    entry = _GUARDED.get(start)
    if entry is not None and entry[0]() is not None:
        return entry[1], entry[2], start, end
    return start, end, start, end


class OutOfBounds(RuntimeError):
    """An access outside every tensor of the launch: the kernel's own bug, reported as such."""


def program_index(i: int, n: int) -> int:
    """The program run at step ``i`` of ``n``: odd indices descending, then even indices ascending."""
    odds = n // 2
    if i < odds:
        return 2 * (odds - 1 - i) + 1
    return 2 * (i - odds)


def _extents(args: Any) -> list[tuple[int, int, int, int]]:
    found: list[tuple[int, int, int, int]] = []

    def visit(arg: Any) -> None:
        base = getattr(arg, "base", None)
        if isinstance(arg, tuple | list):
            for item in arg:
                visit(item)
        elif hasattr(arg, "untyped_storage"):
            found.append(_bounds(arg.untyped_storage()))
        elif base is not None and hasattr(base, "untyped_storage"):  # a TensorWrapper or TensorDescriptor
            visit(base)

    visit(args)
    return found


def _check(ptrs: Any, mask: Any, what: str) -> None:
    if not _EXTENTS:
        return
    addresses = np.asarray(ptrs.data, dtype=np.uint64).reshape(-1)
    if mask is not None:
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data)).reshape(-1)
        addresses = addresses[active]
    if addresses.size == 0:
        return
    size = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
    extents = [(e[0], e[1]) if what == "load" else (e[2], e[3]) for e in _EXTENTS[-1]]
    inside = np.zeros(addresses.shape, dtype=bool)
    for start, end in extents:
        inside |= (addresses >= start) & (addresses + size <= end)
    if not inside.all():
        bad = int(addresses[~inside][0])
        start, end = min(extents, key=lambda e: min(abs(bad - e[0]), abs(bad - e[1])), default=(0, 0))
        where = f" (byte {bad - start} of the nearest, a {end - start}-byte tensor argument)" if end else ""
        lanes = int((~inside).sum())
        raise OutOfBounds(f"out-of-bounds {what}: {lanes} active lane(s) address memory outside every tensor "
                          f"passed to the kernel{where}")


def install() -> bool:
    """Wrap the interpreter's builder and grid executor; False where this Triton lacks them."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover
        return False
    builder = getattr(interpreter, "interpreter_builder", None)
    executor = getattr(interpreter, "GridExecutor", None)
    if builder is None or executor is None or getattr(builder, "_warpgym_grid", False):
        return builder is not None and getattr(builder, "_warpgym_grid", False)
    needed = ("set_grid_idx", "create_masked_load", "create_masked_store", "_init_args_hst")
    if not all(hasattr(builder if n != "_init_args_hst" else executor, n) for n in needed):
        return False

    set_idx = builder.set_grid_idx

    def set_grid_idx(x: int, y: int, z: int) -> None:
        nx, ny, nz = builder.grid_dim
        set_idx(program_index(x, nx), program_index(y, ny), program_index(z, nz))

    builder.set_grid_idx = set_grid_idx

    def checked(name: str, what: str, ptr_at: int, mask_at: int | None) -> None:
        original = getattr(builder, name, None)
        if original is None:
            return

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _check(args[ptr_at], args[mask_at] if mask_at is not None and mask_at < len(args) else None, what)
            return original(*args, **kwargs)

        setattr(builder, name, wrapper)

    checked("create_masked_load", "load", 0, 1)
    checked("create_masked_store", "store", 0, 2)
    checked("create_atomic_rmw", "atomic", 1, 3)
    checked("create_atomic_cas", "atomic", 0, None)

    init_args = executor._init_args_hst
    call = executor.__call__

    @functools.wraps(init_args)
    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        _EXTENTS.append(_extents([args_hst, list(kwargs_hst.values())]))
        return args_hst, kwargs_hst

    @functools.wraps(call)
    def run_grid(self: Any, *args: Any, **kwargs: Any) -> Any:
        depth = len(_EXTENTS)
        try:
            return call(self, *args, **kwargs)
        finally:
            del _EXTENTS[depth:]

    executor._init_args_hst = init_args_hst
    executor.__call__ = run_grid
    builder._warpgym_grid = True
    return True
