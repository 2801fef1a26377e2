"""Memory on the CPU as a GPU would leave it, and writes to it that no kernel or PyTorch op made.

Two things tell a CPU run from a GPU one, and both are closed here while Triton's interpreter runs the
candidate (a CPU worker only):

- **Fresh memory.** A large CPU allocation comes straight from the operating system as zero pages, so a
  kernel that adds into a ``torch.empty`` accumulator, or writes only the non-zero elements of an output,
  is right by chance; on a GPU the caching allocator hands back a previous call's memory. Every tensor
  the candidate's code allocates without asking for values (``torch.empty``, ``empty_like``,
  ``new_empty``, ``empty_strided``, ...) is filled with the poison word (every bit set: NaN in each float
  dtype) as it is made. ``torch.zeros``/``full``/``fill_`` still give what they ask for.
- **Host writes through raw memory.** On the CPU a tensor's memory is the host's: NumPy can write an
  answer straight into an output through an ``__array_interface__`` built from ``data_ptr()`` (or from
  ``id()`` and pointer chasing), without any tensor method the run-time policy sees. On a GPU host code
  cannot do that. Every tensor's memory is therefore kept as its trusted writers left it: a shadow copy
  per storage, taken when it is allocated (poison), after each PyTorch op that writes it, and after each
  kernel launch that stored into it. Before a kernel's programs run, before a PyTorch op reads a tensor,
  and when the entrypoint returns (its outputs), the memory must equal its shadow; bytes that changed
  in between were written by the host behind the kernels' backs (``findings``). A tensor whose memory no
  PyTorch op allocated (``torch.from_numpy``, ``frombuffer``, DLPack) is a host-made answer in waiting:
  one larger than a small table is reported when a call first uses it.

Shadows cost one copy of each storage the candidate writes (outputs, scratch), kept while the storage
lives; comparing costs a pass over each storage a launch or op is given. A write between a launch's
programs (from Python an interpreted kernel body calls) is not seen: the static rules refuse such bodies.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from warpgym.env.worker import interpreter_grid
from warpgym.env.worker.interpreter_races import raw_bytes

POISON_BYTE = 0xFF
ALLOCATIONS = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided",
                         "empty_permuted"})
"""Allocations that ask for no values: they get the poison, as reused GPU memory would hold garbage."""
NO_DATA = frozenset({
    *ALLOCATIONS, "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose",
    "permute", "expand", "unsqueeze", "squeeze", "select", "slice", "alias", "detach", "unbind", "split",
    "split_with_sizes", "chunk", "narrow", "unfold", "view_as_real", "view_as_complex", "movedim", "flatten",
    "lift_fresh", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "set_", "record_stream",
    "is_same_size", "_has_compatible_shallow_copy_type", "expand_as", "view_as", "diagonal", "stride", "size",
    "numel", "dim", "storage_offset", "is_contiguous", "conj", "_conj", "_neg_view", "is_pinned",
})
"""Ops that read no element of their tensors: the memory is not compared before them."""
UNKNOWN_LIMIT = 8 << 10
"""Bytes of tensors of unknown origin a call may use, all of them together: a small table (as the policy's
host-data limit)."""
CHUNK = 8 << 20


@dataclass
class _Record:
    storage: weakref.ref[Any]
    shadow: np.ndarray | None
    """The trusted bytes; None while the storage holds only the poison it was allocated with."""
    address: int
    nbytes: int


_RECORDS: dict[int, _Record] = {}
"""Every storage whose writers are known, by the storage object's id, dropped when it dies."""


def _memory(storage: Any) -> np.ndarray:
    return raw_bytes(storage.data_ptr(), storage.nbytes())


def _register(storage: Any, shadow: np.ndarray | None) -> None:
    key = id(storage)

    def forget(ref: weakref.ref[Any]) -> None:
        if key in _RECORDS and _RECORDS[key].storage is ref:
            del _RECORDS[key]

    _RECORDS[key] = _Record(weakref.ref(storage, forget), shadow, storage.data_ptr(), storage.nbytes())


def trust(storage: Any) -> None:
    """The storage's current bytes are its trusted writers' (a launch or op wrote them, or the harness)."""
    if storage.nbytes() == 0:
        return
    record = _RECORDS.get(id(storage))
    if record is not None and record.storage() is storage and record.shadow is not None \
            and record.shadow.size == storage.nbytes():
        np.copyto(record.shadow, _memory(storage))
        record.address = storage.data_ptr()
        return
    _register(storage, _memory(storage).copy())


GROWING = frozenset({"resize_", "resize_as_"})
"""Ops that can enlarge a tensor's storage in place: the bytes they add hold whatever the allocator gave."""


def _sizes(args: Any) -> list[tuple[Any, int]]:
    """The storage an in-place resize acts on, with its size before."""
    return [(storage, storage.nbytes()) for storage in _storages(list(args[:1]))]


def _poison_growth(before: list[tuple[Any, int]]) -> None:
    """The bytes a resize added get the poison, as a fresh allocation does: grown from nothing, a storage
    would otherwise hold the OS's zero pages, and an accumulator assumed to start at zero would pass."""
    for storage, size in before:
        if storage.nbytes() > size:
            poison_storage(storage, start=size)


def _poison(storage: Any) -> None:
    if storage.nbytes():
        _memory(storage).fill(POISON_BYTE)
        _register(storage, None)


def _differing(memory: np.ndarray, shadow: np.ndarray | None) -> int:
    """How many bytes of ``memory`` differ from the shadow (or from the poison), chunk by chunk."""
    count = 0
    for start in range(0, memory.size, CHUNK):
        part = memory[start:start + CHUNK]
        expected = POISON_BYTE if shadow is None else shadow[start:start + CHUNK]
        count += int(np.count_nonzero(part != expected))
    return count


def _storages(tree: Any) -> list[Any]:
    found: dict[int, Any] = {}

    def visit(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            if value.device.type == "cpu" and value.layout == torch.strided:
                storage = value.untyped_storage()
                found.setdefault(id(storage), storage)
        elif isinstance(value, tuple | list):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    visit(tree)
    return list(found.values())


class HostWrites(TorchDispatchMode):
    """Watches one stretch of candidate code (a call, an import, a model's construction): poisons what it
    allocates and records its PyTorch ops' writes; ``strict`` (a call) also reports host writes and
    memory of unknown origin in ``findings``."""

    def __init__(self, strict: bool = True) -> None:
        super().__init__()
        self.strict = strict
        self.findings: list[str] = []
        self.programs_running = 0
        self.unknown_bytes = 0

    # ------------------------------------------------------------------ the checks
    def check(self, storage: Any, when: str) -> None:
        """The storage must hold what its trusted writers left in it; it is trusted as it is afterwards."""
        if storage.nbytes() == 0:
            return
        record = _RECORDS.get(id(storage))
        if record is None or record.storage() is not storage:
            self.unknown_bytes += storage.nbytes()  # in total: many small tables make one large one
            if self.strict and self.unknown_bytes > UNKNOWN_LIMIT:
                self._found(f"{when}, tensors whose memory no PyTorch op allocated (torch.from_numpy, "
                            f"frombuffer, DLPack) were used, {self.unknown_bytes} bytes in this stretch: "
                            "their contents were made on the host, not by a kernel")
            trust(storage)
            return
        moved = record.address != storage.data_ptr() or record.nbytes != storage.nbytes()
        if moved and self.strict:
            self._found(f"{when}, a tensor's memory had been reallocated (resized from {record.nbytes} to "
                        f"{storage.nbytes()} bytes or moved) by no PyTorch op the watch saw: its new "
                        "contents were written outside every check, so they cannot be the kernels' work")
        changed = 0 if moved else _differing(_memory(storage), record.shadow)
        if changed and self.strict:
            self._found(f"{when}, {changed} byte(s) of a {storage.nbytes()}-byte tensor had been written by "
                        "the host outside any kernel or PyTorch op (through a raw pointer: NumPy's "
                        "__array_interface__, ctypes, ...). On a GPU host code cannot write the device's "
                        "memory; the answer must come from the candidate's kernels")
        if changed or moved:
            trust(storage)

    def _found(self, text: str) -> None:
        if len(self.findings) < 8 and text not in self.findings:
            self.findings.append(text)

    def check_outputs(self, outputs: list[Any]) -> None:
        for i, storage in enumerate(_storages(outputs)):
            self.check(storage, f"when the entrypoint returned (output {i})")

    # ------------------------------------------------------------------ launches (interpreter_grid)
    def before_programs(self, launch: Any) -> None:
        for storage in launch.storages:
            self.check(storage, f"before kernel {launch.kernel} ran")
        launch.watched = True
        self.programs_running += 1

    def after_launch(self, launch: Any) -> None:
        if not getattr(launch, "watched", False):
            return
        self.programs_running -= 1
        for storage in launch.storages:
            if storage.data_ptr() in launch.written:
                trust(storage)

    # ------------------------------------------------------------------ PyTorch ops
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.programs_running:  # the interpreter's own copies around a launch's programs
            return func(*args, **kwargs)
        name = func.overloadpacket.__name__
        inputs = _storages([args, kwargs])
        if name not in NO_DATA:
            for storage in inputs:
                self.check(storage, f"before the PyTorch op {name}")
        grown = _sizes(args) if name in GROWING else None
        out = func(*args, **kwargs)
        if grown is not None:
            _poison_growth(grown)
        known = {id(s) for s in inputs}
        fresh = [s for s in _storages(out) if id(s) not in known]
        if name in ALLOCATIONS:
            for storage in fresh:
                _poison(storage)
        elif name not in NO_DATA:
            for storage in [*fresh, *self._written(func, args, kwargs)]:
                trust(storage)
        return out

    @staticmethod
    def _written(func: Any, args: Any, kwargs: Any) -> list[Any]:
        """The storages of the arguments the op's schema says it writes (in-place and ``out=`` ops)."""
        written = []
        for i, argument in enumerate(func._schema.arguments):
            info = argument.alias_info
            if info is None or not info.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(argument.name)
            written.extend(_storages([value]))
        return written

    def __enter__(self) -> HostWrites:
        super().__enter__()
        interpreter_grid.OBSERVERS.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in interpreter_grid.OBSERVERS:
            interpreter_grid.OBSERVERS.remove(self)
        super().__exit__(*exc)


def trust_inputs(inputs: dict[str, Any]) -> None:
    """The judge's inputs (and the guards around them), as the worker made them."""
    for storage in _storages(list(inputs.values())):
        trust(storage)


class FreshPoison(TorchDispatchMode):
    """On a GPU: what the candidate's code allocates without asking for values holds the poison, as on the
    CPU. The caching allocator usually hands back earlier memory, but an allocation larger than any block
    it holds comes straight from ``cudaMalloc``, zeroed in practice: an accumulator assumed to start at
    zero would pass by chance. On a GPU the fill is a driver memset on the current stream, so the device
    trace shows it as a memset (allowed), not as a kernel the candidate ran."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        grown = _sizes(args) if func.overloadpacket.__name__ in GROWING else None
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__ in ALLOCATIONS and isinstance(out, torch.Tensor) and out.numel():
            poison_storage(out.untyped_storage())
        if grown is not None:
            _poison_growth(grown)
        return out


def poison_storage(storage: torch.UntypedStorage, start: int = 0) -> None:
    """Every byte of ``storage`` from ``start`` on set to the poison, in stream order."""
    if storage.device.type == "cuda":
        from cuda.bindings import driver as cu
        from warpgym.env.toolchain.driver import check

        stream = torch.cuda.current_stream(storage.device).cuda_stream
        filled = cu.cuMemsetD8Async(storage.data_ptr() + start, POISON_BYTE, storage.nbytes() - start, stream)
        check(filled, "cuMemsetD8Async")
        return
    whole = torch.empty(0, dtype=torch.uint8, device=storage.device)
    whole.set_(storage, start, (storage.nbytes() - start,)).fill_(POISON_BYTE)
