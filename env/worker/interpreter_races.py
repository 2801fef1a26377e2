"""Data races that Triton's interpreter hides, found while it runs a launch (CPU only).

The interpreter runs a grid's programs one at a time, and each program's block operations as whole
vectors, so two kinds of code that race on a GPU compute the right answer here:

- **Between programs.** A program that loads, adds and stores a running total (no atomic) never loses
  an update when programs run one after the other; on a GPU they run at once and updates are lost.
  Within a launch every plain store and every atomic write is remembered with the program that made it;
  a plain load of an address another program wrote, a plain store over another program's value (unless
  it writes the same bytes: overlapping tail tiles do), and an atomic on an address another program
  stored to plainly are races, unless the two programs synchronised.
- **Inside a program.** The elements of a block are spread over a program's threads; a load of an
  address that another element of an earlier store wrote (lanes exchanging data through global memory)
  reads the old value on a GPU unless a ``tl.debug_barrier()`` lies between them. Per program, each
  address stored since the last barrier is remembered with the element (position and block shape) that
  stored it; a load by any other element is a race. A load by the same element of the same shape is the
  same thread, in order.

What counts as synchronisation, and why: an atomic with acquire semantics (``tl.atomic_*`` default to
``acq_rel``; ``atomic_cas``/``xchg`` locks, a ticket counter) on a tensor, after another program's atomic
with release semantics on the same tensor, orders everything that program did before its atomic before
everything this program does after it (a vector clock per program, merged at each acquire). This
admits the honest patterns: split-K with atomic adds (atomics never race with atomics), "the last
program to take a ticket reduces the partials the others stored", and lock-protected read-modify-write.
Synchronisation is tracked per tensor, not per address (two locks in one tensor count as one), and a
volatile load counts as an acquiring atomic read (spin-waits on a flag): both are lenient on purpose.
Only the order the interpreter ran is seen: a race that needs another order to show is not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ATOMIC = np.int64(1) << np.int64(40)
"""Set in a lane code for a write made by an atomic (atomics never race with atomics)."""
MAX_SHADOW_BYTES = 1 << 30
"""Shadow memory per tensor at most; past it that tensor is not watched for races (never a false verdict)."""


class Race(RuntimeError):
    """Two accesses a GPU would run in no fixed order: the kernel's own bug, reported as such."""


def raw_bytes(address: int, nbytes: int) -> np.ndarray:
    """The ``nbytes`` bytes at ``address`` as a writable NumPy array (no copy, no PyTorch op)."""

    class _Raw:
        __array_interface__ = {"data": (address, False), "shape": (nbytes,), "typestr": "|u1", "version": 3}

    return np.asarray(_Raw())


@dataclass
class _Shadow:
    """Who last wrote each granule of one tensor in this launch: a segment (``stamp``, -1 for nobody) and
    the element that wrote it (``lane``: block shape and flat position, ``ATOMIC`` set for atomics)."""

    base: int
    nbytes: int
    grain: int
    stamp: np.ndarray
    lane: np.ndarray

    @classmethod
    def new(cls, base: int, nbytes: int, grain: int) -> _Shadow:
        n = -(-nbytes // grain)
        return cls(base, nbytes, grain, np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=np.int64))

    def refine(self, grain: int) -> None:
        factor = self.grain // grain
        self.stamp, self.lane = np.repeat(self.stamp, factor), np.repeat(self.lane, factor)
        self.grain = grain


class Access:
    """The active lanes of one memory operation that fall in one tensor. ``lanes`` (lane codes: the block
    shape's id and each element's flat position) and ``values`` (for stores, each lane's bytes, shape
    (lanes, size)) may be given as functions, computed only if a check needs them: most accesses touch a
    tensor no other program wrote."""

    def __init__(self, key: int, base: int, nbytes: int, offsets: np.ndarray, size: int,
                 lanes: np.ndarray | Callable[[], np.ndarray],
                 values: np.ndarray | Callable[[], np.ndarray | None] | None = None) -> None:
        self.key, self.base, self.nbytes, self.offsets, self.size = key, base, nbytes, offsets, size
        """``offsets``: byte offsets from the tensor's storage start."""
        self._lanes, self._values = lanes, values

    @property
    def lanes(self) -> np.ndarray:
        if callable(self._lanes):
            self._lanes = self._lanes()
        return self._lanes

    @property
    def values(self) -> np.ndarray | None:
        if callable(self._values):
            self._values = self._values()
        return self._values


@dataclass
class LaunchRaces:
    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    program: int = -1
    segment: int = -1
    floor: int = 0
    """The first segment since the current program's last barrier (or its start)."""
    _owners: np.ndarray = field(default_factory=lambda: np.zeros(1024, dtype=np.int64))
    """The program of each segment (the first ``segment + 1`` entries)."""
    synced: dict[int, int] = field(default_factory=dict)
    """For the current program: each program's last segment known to happen before it."""
    published: dict[int, dict[int, int]] = field(default_factory=dict)
    """Per tensor: what a release on it published (program -> last segment)."""
    shadows: dict[int, _Shadow | None] = field(default_factory=dict)
    shapes: dict[tuple[int, ...], int] = field(default_factory=dict)
    _known: tuple[np.ndarray, np.ndarray] | None = None
    """``synced`` as sorted arrays, rebuilt after it changes."""

    # ------------------------------------------------------------------ program structure
    def _new_segment(self) -> None:
        self.segment += 1
        if self.segment >= self._owners.size:
            self._owners = np.concatenate([self._owners, np.zeros_like(self._owners)])
        self._owners[self.segment] = self.program

    def start_program(self, x: int, y: int, z: int) -> None:
        nx, ny, _ = self.grid
        self.program = x + nx * (y + ny * z)
        self.synced, self._known = {}, None
        self._new_segment()
        self.floor = self.segment

    def barrier(self) -> None:
        self._new_segment()
        self.floor = self.segment

    def lane_codes(self, shape: tuple[int, ...], flat: np.ndarray) -> np.ndarray:
        block = tuple(d for d in shape if d != 1)  # size-1 axes do not change which thread holds an element
        shape_id = self.shapes.setdefault(block, len(self.shapes))
        return (np.int64(shape_id) << np.int64(24)) | flat.astype(np.int64)

    # ------------------------------------------------------------------ shadows
    def _shadow(self, access: Access, create: bool) -> tuple[_Shadow, np.ndarray] | None:
        """The tensor's shadow and the first granule each lane covers; the shadow is refined when an access
        is narrower or less aligned than its granules."""
        shadow = self.shadows.get(access.key)
        if shadow is None and (not create or access.key in self.shadows):
            return None
        common = math.gcd(access.size, int(np.gcd.reduce(access.offsets)) if access.offsets.size else 0)
        if shadow is None:
            if 12 * (access.nbytes // common + 1) > MAX_SHADOW_BYTES:
                self.shadows[access.key] = None
                return None
            shadow = self.shadows[access.key] = _Shadow.new(access.base, access.nbytes, common)
        elif common % shadow.grain:
            grain = math.gcd(shadow.grain, common)
            if 12 * (shadow.nbytes // grain + 1) > MAX_SHADOW_BYTES:
                self.shadows[access.key] = None
                return None
            shadow.refine(grain)
        return shadow, access.offsets // shadow.grain

    def _granules(self, shadow: _Shadow, first: np.ndarray, size: int) -> np.ndarray:
        """Every granule the lanes cover, shape (lanes, size // grain)."""
        span = max(1, size // shadow.grain)
        return first[:, None] if span == 1 else first[:, None] + np.arange(span)[None, :]

    def _unsynced(self, stamps: np.ndarray) -> np.ndarray:
        """Which of these segments belong to another program that does not happen before this one."""
        written = stamps >= 0
        if not written.any():
            return written
        owners = self._owners[np.maximum(stamps, 0)]
        other = written & (owners != self.program)
        if not self.synced or not other.any():
            return other
        if self._known is None:
            programs = np.fromiter(self.synced, dtype=np.int64, count=len(self.synced))
            order = np.argsort(programs)
            segments = np.fromiter(self.synced.values(), dtype=np.int64, count=len(self.synced))
            self._known = (programs[order], segments[order])
        programs, segments = self._known
        at = np.minimum(np.searchsorted(programs, owners), programs.size - 1)
        known = np.where(programs[at] == owners, segments[at], -1)
        return other & (stamps > known)

    # ------------------------------------------------------------------ accesses
    def load(self, access: Access) -> None:
        found = self._shadow(access, create=False)
        if found is None:
            return
        shadow, first = found
        granules = self._granules(shadow, first, access.size)
        stamps = shadow.stamp[granules]
        other = self._unsynced(stamps)
        if other.any():
            lane, part = np.argwhere(other)[0]
            self._report_between(access, int(lane), int(stamps[lane, part]), "loaded", "wrote")
        recent = stamps >= self.floor
        if not recent.any():
            return
        lanes = shadow.lane[granules]
        mixed = recent & ((lanes & ~ATOMIC) != access.lanes[:, None])
        if mixed.any():
            lane, part = np.argwhere(mixed)[0]
            self._report_within(access, int(lane), int(lanes[lane, part] & ~ATOMIC))

    def store(self, access: Access, atomic: bool = False) -> None:
        found = self._shadow(access, create=True)
        if found is None:
            return
        shadow, first = found
        granules = self._granules(shadow, first, access.size)
        stamps = shadow.stamp[granules]
        other = self._unsynced(stamps)
        if other.any():
            lanes = shadow.lane[granules]
            if atomic:
                other &= (lanes & ATOMIC) == 0  # atomics never race with atomics
            else:
                other &= ~self._same_bytes(access, other)
        if other.any():
            lane, part = np.argwhere(other)[0]
            what = "updated atomically" if atomic else "stored to"
            earlier = "updated atomically" if lanes[lane, part] & ATOMIC else "stored to"
            self._report_between(access, int(lane), int(stamps[lane, part]), what, earlier)
        shadow.stamp[granules] = self.segment
        shadow.lane[granules] = (access.lanes | (ATOMIC if atomic else 0))[:, None]

    def _same_bytes(self, access: Access, other: np.ndarray) -> np.ndarray:
        """Lanes whose store writes the bytes memory already holds (a benign overlap of two programs)."""
        rows = other.any(axis=1)
        same = np.zeros(other.shape[0], dtype=bool)
        if access.values is None:
            return same[:, None]
        memory = raw_bytes(access.base, access.nbytes)
        offsets = access.offsets[rows]
        held = memory[offsets[:, None] + np.arange(access.size)[None, :]]
        same[rows] = (held == access.values[rows]).all(axis=1)
        return same[:, None]

    def atomic(self, accesses: list[Access], acquire: bool, release: bool, writes: bool) -> None:
        """An atomic operation: acquire first (it reads), then its writes, then release (they are seen)."""
        if acquire:
            for access in accesses:
                for program, segment in self.published.get(access.key, {}).items():
                    if segment > self.synced.get(program, -1) and program != self.program:
                        self.synced[program], self._known = segment, None
        for access in accesses:
            if writes:
                self.store(access, atomic=True)
            else:
                self._atomic_read(access)
        if release:
            for access in accesses:
                published = self.published.setdefault(access.key, {})
                for program, segment in (*self.synced.items(), (self.program, self.segment)):
                    if segment > published.get(program, -1):
                        published[program] = segment
            self._new_segment()

    def _atomic_read(self, access: Access) -> None:
        found = self._shadow(access, create=False)
        if found is None:
            return
        shadow, first = found
        granules = self._granules(shadow, first, access.size)
        stamps, lanes = shadow.stamp[granules], shadow.lane[granules]
        other = self._unsynced(stamps) & ((lanes & ATOMIC) == 0)
        if other.any():
            lane, part = np.argwhere(other)[0]
            self._report_between(access, int(lane), int(stamps[lane, part]), "read atomically", "stored to")

    # ------------------------------------------------------------------ messages
    def _where(self, program: int) -> str:
        nx, ny, _ = self.grid
        x, rest = program % nx, program // nx
        y, z = rest % ny, rest // ny
        return f"program ({x}, {y}, {z})"

    def _report_between(self, access: Access, lane: int, stamp: int, did: str, earlier: str) -> None:
        offset, writer = int(access.offsets[lane]), self._where(int(self._owners[stamp]))
        raise Race(
            f"data race in kernel {self.kernel}: {self._where(self.program)} {did} byte {offset} of a "
            f"{access.nbytes}-byte tensor argument that {writer} {earlier} in the "
            "same launch, with no atomic synchronising the two. On a GPU the programs of a launch run at "
            "the same time and in no fixed order, so one may see the memory before or after the other "
            "wrote it (a lost update); the interpreter runs them one at a time, which hides it. Combine "
            "results across programs with tl.atomic_* (or a second launch)")

    def _report_within(self, access: Access, lane: int, writer: int) -> None:
        offset = int(access.offsets[lane])
        raise Race(
            f"data race in kernel {self.kernel}: in {self._where(self.program)}, element "
            f"{int(access.lanes[lane]) & 0xFFFFFF} of a load reads byte {offset} of a {access.nbytes}-byte "
            f"tensor argument that element {writer & 0xFFFFFF} of an earlier store wrote, with no "
            "tl.debug_barrier() between them. On a GPU a block's elements are held by different threads and "
            "nothing orders one thread's store before another's load; the interpreter runs a whole block "
            "at once, which hides it. Keep the exchange in registers (tl.associative_scan, tl.reshape, "
            "tl.sum) or put tl.debug_barrier() between the store and the load")


def lanes_of(ptrs: Any, mask: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The active lanes of an access: addresses, flat positions, and the block's shape."""
    data = np.asarray(ptrs.data)
    shape = tuple(data.shape)
    addresses = data.astype(np.uint64, copy=False).reshape(-1)
    flat = np.arange(addresses.size)
    if mask is not None:
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), shape).reshape(-1)
        addresses, flat = addresses[active], flat[active]
    return addresses, flat, shape


def value_bytes(value: Any, shape: tuple[int, ...], flat: np.ndarray, size: int) -> np.ndarray | None:
    """Each active lane's stored bytes, shape (lanes, size); None when the value's layout is unexpected."""
    data = np.ascontiguousarray(np.broadcast_to(np.asarray(value.data), shape)).reshape(-1)
    if data.dtype.itemsize != size:
        return None
    return data.view(np.uint8).reshape(-1, size)[flat]
