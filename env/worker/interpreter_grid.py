"""Checks the Triton interpreter's sequential launch would otherwise hide, installed in a CPU worker.

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
- **Races.** Every access is handed to the launch's race tracker (``interpreter_races``): programs that
  share memory without atomics, and a program's elements that exchange data through memory without a
  barrier, race on a GPU (``Race``, kept in ``RACES`` even when the candidate catches it).

Observers (``OBSERVERS``: the host-write check, ``host_writes``) are told when a launch's programs are
about to run and when its results are back. All of it wraps the interpreter's one builder object; a
Triton without it gets none of these checks, never a false rejection.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from warpgym.env.worker.interpreter_races import Access, LaunchRaces, Race, lanes_of, value_bytes


@dataclass
class Launch:
    """One launch being interpreted: its kernel, the tensors it was given, and what its programs did."""

    kernel: str
    extents: list[tuple[int, int, int, int]]
    """Per tensor storage: (start, end) a load may read, then (start, end) a store may write."""
    storages: list[Any]
    """The storages of its tensor arguments, one each."""
    races: LaunchRaces
    written: set[int] = field(default_factory=set)
    """The storage starts its stores and atomics wrote to."""
    watched: bool = False
    """Its programs started (the observers were told)."""


_LAUNCHES: list[Launch] = []
"""The launches being interpreted (a launch from a grid callable runs inside another's)."""

RACES: list[str] = []
"""Races found since the worker last cleared it: kept even when the candidate catches the exception."""

OBSERVERS: list[Any] = []
"""Objects told about each launch (``host_writes``): ``before_programs(launch)`` once its grid is known,
right before its first program, and ``after_launch(launch)`` once its results are back in its tensors."""


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


def _storages(args: Any) -> list[Any]:
    found: dict[int, Any] = {}

    def visit(arg: Any) -> None:
        base = getattr(arg, "base", None)
        if isinstance(arg, tuple | list):
            for item in arg:
                visit(item)
        elif hasattr(arg, "untyped_storage"):
            storage = arg.untyped_storage()
            found.setdefault(storage.data_ptr(), storage)
        elif base is not None and hasattr(base, "untyped_storage"):  # a TensorWrapper or TensorDescriptor
            visit(base)

    visit(args)
    return list(found.values())


def _accesses(ptrs: Any, mask: Any, what: str, value: Any = None) -> list[Access]:
    """The active lanes of a load, store or atomic, one ``Access`` per tensor; ``OutOfBounds`` when a lane
    addresses none of the launch's tensors."""
    if not _LAUNCHES:
        return []
    launch = _LAUNCHES[-1]
    addresses, flat, shape = lanes_of(ptrs, mask)
    if addresses.size == 0:
        return []
    size = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
    extents = [(e[0], e[1]) if what == "load" else (e[2], e[3]) for e in launch.extents]
    groups: list[tuple[int, np.ndarray | None]] = []
    covered = None
    for i, (start, end) in enumerate(extents):
        inside = (addresses >= start) & (addresses + size <= end)
        if inside.all():  # the usual case: one tensor holds every lane
            groups, covered = [(i, None)], None
            break
        if inside.any():
            groups.append((i, inside))
            covered = inside if covered is None else covered | inside
    if not groups or (covered is not None and not covered.all()):
        outside = addresses if covered is None else addresses[~covered]
        bad = int(outside[0])
        start, end = min(extents, key=lambda e: min(abs(bad - e[0]), abs(bad - e[1])), default=(0, 0))
        where = f" (byte {bad - start} of the nearest, a {end - start}-byte tensor argument)" if end else ""
        raise OutOfBounds(f"out-of-bounds {what}: {outside.size} active lane(s) address memory outside every "
                          f"tensor passed to the kernel{where}")
    races = launch.races
    found = []
    for i, chosen in groups:
        _, _, start, end = launch.extents[i]
        lanes = addresses if chosen is None else addresses[chosen]
        positions = flat if chosen is None else flat[chosen]
        found.append(Access(
            start, start, end - start, (lanes - np.uint64(start)).astype(np.int64), size,
            lambda p=positions: races.lane_codes(shape, p),
            None if value is None else lambda p=positions: value_bytes(value, shape, p, size)))
    return found


_INNER: list[int] = [0]
"""Inside an atomic load or store, whose interpreter code runs a plain one: that one is not plain."""


def _semantics(sem: Any) -> tuple[bool, bool]:
    """(acquires, releases) for an atomic's memory semantics."""
    name = getattr(sem, "name", str(sem))
    return name in ("ACQUIRE", "ACQUIRE_RELEASE"), name in ("RELEASE", "ACQUIRE_RELEASE")


def load_arguments(names: list[str], args: tuple, kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
    """(ptrs, mask, is_volatile) of a ``create_masked_load`` call, read by name: the parameters differ
    between Triton versions (3.8 has cache_modifier and eviction_policy before is_volatile, 3.9 one
    cache_policy)."""
    named = {**dict(zip(names, args, strict=False)), **kwargs}
    return named["ptrs"], named["mask"], bool(named.get("is_volatile", False))


def _on_load(ptrs: Any, mask: Any, volatile: bool) -> None:
    accesses = _accesses(ptrs, mask, "load")
    if accesses and not _INNER[0]:
        races = _LAUNCHES[-1].races
        if volatile:  # a spin-wait's read: as an acquiring atomic read (see interpreter_races)
            races.atomic(accesses, acquire=True, release=False, writes=False)
        else:
            for access in accesses:
                races.load(access)


def _on_store(ptrs: Any, value: Any, mask: Any) -> None:
    accesses = _accesses(ptrs, mask, "store", value)
    if accesses:
        _LAUNCHES[-1].written.update(a.key for a in accesses)
        if not _INNER[0]:
            for access in accesses:
                _LAUNCHES[-1].races.store(access)


def _on_atomic(ptrs: Any, mask: Any, sem: Any, what: str) -> None:
    accesses = _accesses(ptrs, mask, "load" if what == "read" else "atomic")
    if accesses:
        acquire, release = _semantics(sem)
        if what != "read":
            _LAUNCHES[-1].written.update(a.key for a in accesses)
        _LAUNCHES[-1].races.atomic(accesses, acquire=acquire, release=release, writes=what != "read")


def _record_race(exc: Race) -> None:
    if str(exc) not in RACES:
        RACES.append(str(exc))


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

    set_idx, set_dim = builder.set_grid_idx, builder.set_grid_dim

    def set_grid_idx(x: int, y: int, z: int) -> None:
        nx, ny, nz = builder.grid_dim
        set_idx(program_index(x, nx), program_index(y, ny), program_index(z, nz))
        if _LAUNCHES:
            _LAUNCHES[-1].races.grid = (nx, ny, nz)
            _LAUNCHES[-1].races.start_program(*builder.grid_idx)

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        set_dim(nx, ny, nz)
        if _LAUNCHES:
            for observer in OBSERVERS:
                observer.before_programs(_LAUNCHES[-1])

    builder.set_grid_idx = set_grid_idx
    builder.set_grid_dim = set_grid_dim

    def wrap(name: str, before: Any, inner: bool = False) -> None:
        original = getattr(builder, name, None)
        if original is None:
            return

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                before(*args, **kwargs)
            except Race as exc:
                _record_race(exc)
                raise
            if not inner:
                return original(*args, **kwargs)
            _INNER[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                _INNER[0] -= 1

        setattr(builder, name, wrapper)

    load_names = list(inspect.signature(builder.create_masked_load).parameters)
    wrap("create_masked_load", lambda *args, **kwargs: _on_load(*load_arguments(load_names, args, kwargs)))
    wrap("create_masked_store", lambda ptrs, value, mask, *_, **__: _on_store(ptrs, value, mask))
    wrap("create_atomic_rmw", lambda op, ptrs, val, mask, sem, *_: _on_atomic(ptrs, mask, sem, "write"))
    wrap("create_atomic_cas", lambda ptrs, cmp, val, sem, *_: _on_atomic(ptrs, None, sem, "write"))
    wrap("create_atomic_load", lambda ptrs, mask, sem, *_: _on_atomic(ptrs, mask, sem, "read"), inner=True)
    wrap("create_atomic_store", lambda ptrs, val, mask, sem, *_: _on_atomic(ptrs, mask, sem, "write"),
         inner=True)
    wrap("create_atomic_poll", lambda ptrs, expected, timeout, sem, *_: _on_atomic(ptrs, None, sem, "read"),
         inner=True)
    wrap("create_barrier", lambda *_: _LAUNCHES[-1].races.barrier() if _LAUNCHES else None)

    init_args = executor._init_args_hst
    call = executor.__call__

    @functools.wraps(init_args)
    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        storages = _storages([args_hst, list(kwargs_hst.values())])
        kernel = getattr(self.fn, "__name__", "kernel")
        _LAUNCHES.append(Launch(kernel, [_bounds(s) for s in storages], storages, LaunchRaces(kernel)))
        return args_hst, kwargs_hst

    @functools.wraps(call)
    def run_grid(self: Any, *args: Any, **kwargs: Any) -> Any:
        depth = len(_LAUNCHES)
        try:
            return call(self, *args, **kwargs)
        finally:
            launches = _LAUNCHES[depth:]
            del _LAUNCHES[depth:]
            for launch in launches[:1]:
                for observer in OBSERVERS:
                    observer.after_launch(launch)

    executor._init_args_hst = init_args_hst
    executor.__call__ = run_grid
    builder._warpgym_grid = True
    return True
