"""What host code may do, checked where it happens: on every ATen op the candidate runs.

A static scan (``static.py``) gives early, line-numbered feedback; this dynamic check is
the one that cannot be dodged with ``getattr``, ``importlib`` or a string ``eval``, because
every PyTorch compute op, however it is reached, ends in the dispatcher.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections import Counter
from typing import Any

import torch
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack
from warpgym.env.worker import audit, tensor_objects

# Allocation, views, layout copies and scalar reads: what a kernel wrapper needs.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "full", "full_like", "new_full", "ones", "ones_like", "new_ones", "fill_", "zero_",
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose", "permute",
    "expand", "unsqueeze", "squeeze", "select", "slice", "alias", "detach", "unbind", "split",
    "split_with_sizes", "chunk", "narrow", "unfold", "view_as_real", "view_as_complex", "movedim",
    "flatten", "clone", "contiguous", "copy_", "lift_fresh", "lift_fresh_copy", "_local_scalar_dense",
    "is_nonzero", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "resize_", "set_",
    "record_stream", "is_same_size", "_has_compatible_shallow_copy_type", "expand_as", "view_as",
    "diagonal", "_to_copy", "to", "_pin_memory", "is_pinned", "stride", "size", "numel", "dim",
    "storage_offset", "is_contiguous", "_nested_tensor_from_mask_left_aligned", "resolve_conj",
    "resolve_neg", "conj", "_conj", "_neg_view", "_copy_from", "_copy_from_and_resize",
})


LAYOUT_COPIES = frozenset({"clone", "copy_", "_to_copy", "to", "_copy_from", "_copy_from_and_resize",
                           "lift_fresh_copy"})
"""Allowed ops that move tensor data on the host's behalf: a layout task's whole answer (a transpose is a
``contiguous()`` of a transposed view), so there they count as computing."""
MOVES = LAYOUT_COPIES | {"fill_", "zero_"}
"""Host ops that put data into a tensor (with any op given ``out=``): limited per call in a task that
declares ``host_moves``."""
RELAYOUTS = frozenset({"clone", "copy_", "_to_copy"})
RELAYOUT_NOTE = "(a layout-changing copy: on a GPU, a PyTorch kernel)"


def _relayout(name: str, args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether a copy reads or writes a tensor that is not contiguous, or asks for another memory format:
    on a GPU that is ATen's copy kernel computing inside the entrypoint (a contiguous-to-contiguous copy
    is a plain memcpy), which the device trace refuses in every task, so the CPU's verdict refuses it too."""
    tensors = [a for a in args[:2 if name == "copy_" else 1] if isinstance(a, torch.Tensor)]
    if any(t.numel() > 1 and not t.is_contiguous() for t in tensors):
        return True
    fmt = kwargs.get("memory_format")
    return fmt is not None and fmt not in (torch.preserve_format, torch.contiguous_format)


HOST_ELEMENT_LIMIT = 1024
"""Tensor elements host code may read into Python (sizes, offsets, small tables) or turn from Python
data into a tensor, per call. Beyond it the host is computing: ``x.tolist()``, ``x.numpy()``, a loop of
``float(x[i])``, ``torch.tensor(result)`` or a device-to-host copy do arithmetic no kernel did."""
HOST_READ_METHODS = frozenset({"numpy", "tolist", "__array__", "__dlpack__", "untyped_storage", "storage",
                               "_typed_storage", "__reduce_ex__"})
"""Tensor methods that hand the data to host Python: copies, zero-copy views (NumPy, DLPack), storages,
and serialisation (``torch.save`` pickles through ``__reduce_ex__``)."""
PRINTING_METHODS = frozenset({"__repr__", "__format__", "__str__"})
"""Tensor methods that write its values out as text: PyTorch prints with every mode popped, so no read
inside is seen; each counts the elements the print shows (all of them, up to the print threshold)."""
ELEMENT_CALLBACKS = frozenset({"apply_", "map_", "map2_"})
"""Tensor methods that call a Python function on every element (a C loop no dispatch mode sees): each
element of each tensor given is read by host Python."""
WHOLE_STORAGE_READS = HOST_READ_METHODS - {"tolist"}
"""Of those, the routes that give host code the tensor's whole storage, not only the view's elements: a
NumPy view can be widened with ``as_strided``, a storage serialised whole. They count every element the
storage holds."""


STORAGES = tensor_objects.PLAIN_STORAGES

def _folders(path: str) -> tuple[str, ...]:
    """The folder holding ``path``, as imported and as resolved: frames name their files the way they were
    imported, which differs from the resolved path where an install is reached through a symbolic link."""
    return tuple(dict.fromkeys(os.path.dirname(p) + os.sep for p in (path, os.path.realpath(path))))


def _names(path: str) -> frozenset[str]:
    """A file's path as imported and as resolved (see ``_folders``)."""
    return frozenset({path, os.path.realpath(path)})


_HARNESS_DIRS = _folders(os.path.dirname(os.path.abspath(__file__)))
"""``env/``: the worker's own code (the launch recorder, the timing loop)."""
_OWN_FILES = _names(__file__)
_CANDIDATE_PREFIX = audit.candidate_prefix()


@functools.cache
def _triton_dir() -> tuple[str, ...]:
    import triton

    return _folders(triton.__file__)


def _origin(frame: Any, launching: bool) -> bool:
    """Whether an op counts: the first frame, walking out from the op, that is the candidate's (yes) or
    the harness's (no) decides; PyTorch's own Python layer and other libraries are walked through, so a
    library the candidate calls computes on the candidate's account. During a launch Triton's runtime
    counts as the harness (the interpreter moves tensors itself); outside one, code of nobody's decides
    nothing and the op counts. Reaching a request handler's frame first also counts, and the loader's frames
    are walked through (``audit.HANDLER_FILES``, ``audit.TOOLCHAIN_DIRS``)."""
    stops = _HARNESS_DIRS + (_triton_dir() if launching else ())
    while frame is not None:
        name = frame.f_code.co_filename
        if name in _OWN_FILES:  # the mode's own wrapper frames
            frame = frame.f_back
            continue
        if name.startswith(_CANDIDATE_PREFIX) or name in audit.HANDLER_FILES:
            return True
        if name.startswith(stops) and not name.startswith(audit.TOOLCHAIN_DIRS):
            # a code object of the candidate's under the harness's file name is still the candidate's
            return name.startswith(_HARNESS_DIRS) and not audit.runs_its_own_file(frame)
        frame = frame.f_back
    return not launching


def _dispatch_table(op_name: str) -> str:
    return torch._C._dispatch_dump_table(op_name)


def _shipped_tables() -> dict[str, str]:
    """The dispatcher's kernel table of every allowed op, as PyTorch ships it, read when the worker starts
    (before any candidate code): a Python kernel registered for an allowed op later changes its table."""
    tables = {}
    for name in ALLOWED_OPS:
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op_name = getattr(packet, overload).name()
            tables[op_name] = _dispatch_table(op_name)
    return tables


_SHIPPED: dict[str, str] = {}


def freeze_dispatch_tables() -> None:
    """Read the allowed ops' kernel tables now: the worker calls this once its own imports are done and
    before it imports any candidate."""
    if not _SHIPPED:
        _SHIPPED.update(_shipped_tables())


def _kernels_as_shipped(func: Any) -> bool:
    """The allowed op about to run still has PyTorch's own kernels (checked at the moment it runs, so a
    Python implementation registered and removed again inside the call is seen too)."""
    freeze_dispatch_tables()
    op_name = func.name()
    return _SHIPPED.get(op_name) == _dispatch_table(op_name)


class PolicyMode(TorchDispatchMode):
    """Records every ATen op the candidate's code runs.

    An op counts by where it came from (``_origin``): the worker's own code is not the candidate's,
    and during a kernel launch (``paused``) neither is Triton's runtime (the interpreter moves tensors
    to and from the host), while a grid callable, a heuristic, an autotuner hook or a Python function
    that an interpreted kernel body calls is.
    """

    def __init__(self) -> None:
        super().__init__()
        self.paused = 0
        self.ops: Counter[str] = Counter()
        self.casts: Counter[str] = Counter()
        self.host: Counter[str] = Counter()
        """Elements moved between tensors and host Python, by route (see HOST_ELEMENT_LIMIT)."""
        self.relayouts: Counter[str] = Counter()
        """Copies that change a tensor's layout (``_relayout``), refused in every task."""
        self.moves = 0
        """Copies and fills (``MOVES``)."""
        self.left_modes: list[str] = []
        """What the watched code left on PyTorch's mode stacks, as the tamper report words it
        (``_restore_stacks``)."""

    def recorders(self) -> tuple[PolicyMode, ...]:
        """The modes an op seen here is counted in."""
        return (self,)

    def count_host(self, route: str, elements: int) -> None:
        for mode in self.recorders():
            mode.host[route] += elements

    def refuse_foreign(self, tree: Any) -> None:
        """Refuse an op on a tensor the worker may not call methods on, before any handler does."""
        _refuse_foreign(tree, self.recorders())

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.refuse_foreign((args, kwargs))
        if _origin(sys._getframe(1), self.paused > 0):
            for mode in self.recorders():
                mode.record(func, args, kwargs)
        return func(*args, **kwargs)

    def record(self, func: Any, args: Any, kwargs: dict[str, Any]) -> None:
        name = func.overloadpacket.__name__
        if func.namespace != "aten":
            name = f"{func.namespace}::{name}"  # a custom operator never passes as an allowed one
        elif name in ALLOWED_OPS and not _kernels_as_shipped(func):
            name = f"{name} (its implementation was replaced)"
        self.ops[name] += 1
        self.moves += name in MOVES or "out" in kwargs  # torch.ones((), out=row) fills what exists
        if name == "_to_copy" and args and isinstance(args[0], torch.Tensor):
            dtype = kwargs.get("dtype")
            if dtype is not None and dtype != args[0].dtype:
                self.casts[f"{args[0].dtype} -> {dtype}"] += 1
            device = kwargs.get("device")
            if device is not None and torch.device(device).type == "cpu" and args[0].device.type != "cpu":
                self.host["device-to-host copy"] += args[0].numel()
        elif name == "copy_" and len(args) > 1 and isinstance(args[1], torch.Tensor):
            if args[0].device.type == "cpu" and args[1].device.type != "cpu":
                self.host["device-to-host copy"] += args[1].numel()
        if name in RELAYOUTS and _relayout(name, args, kwargs):
            self.relayouts[f"{name} {RELAYOUT_NOTE}"] += 1
        elif name == "_local_scalar_dense":
            self.host["scalar reads (item(), float(x[i]))"] += 1
        elif name in ("lift_fresh", "lift_fresh_copy") and args and isinstance(args[0], torch.Tensor):
            self.host["tensors built from Python data (torch.tensor)"] += args[0].numel()
        elif name == "set_" and len(args) > 1 and isinstance(args[1], STORAGES):
            # a tensor over a storage built from host bytes (UntypedStorage.from_buffer): Python data
            self.host["tensors built from Python data (torch.tensor)"] += storage_elements(args[1], args[0])

    def forbidden(self, layout: bool = False, calls: int = 1, moves: int | None = None) -> dict[str, int]:
        """The ops and host routes the candidate may not use; for a layout task also the host copies, and
        beyond ``moves`` per call (``Task.host_moves``) the copies and fills. ``calls`` entrypoint calls ran
        under this mode (a timing block): the host limits hold per call, so a few offsets read by every call
        of a long block are not counted as the host computing."""
        refused = LAYOUT_COPIES if layout else frozenset()
        found = {op: n for op, n in self.ops.items() if op not in ALLOWED_OPS or op in refused}
        found.update({f"cast {c}": n for c, n in self.casts.items()})
        found.update(self.relayouts)
        if moves is not None and self.moves > moves * max(1, calls):
            found[f"host copies and fills beyond {moves} per call (this task's answer is data picked by "
                  "indices: a kernel must move it)"] = self.moves
        limit = HOST_ELEMENT_LIMIT * max(1, calls)
        found.update({f"host: {route}": n for route, n in self.host.items() if n > limit})
        return found


class ThreadMode(PolicyMode):
    """What a thread the candidate started runs under (dispatch modes are per thread, so the worker's watch
    never sees it): each op is counted here and in every watch active at that moment, so an answer
    computed on another thread and joined within the call counts against that call."""

    def recorders(self) -> tuple[PolicyMode, ...]:
        return (self, *_active)


def storage_elements(storage: Any, like: Any) -> int:
    size = like.element_size() if isinstance(like, torch.Tensor) else 1
    return storage.nbytes() // max(1, size)


def _printed(tensor: torch.Tensor) -> int:
    """How many of the tensor's values a print shows under the print options now in force: all of them up
    to the threshold, else ``edgeitems`` at each end of every dimension."""
    from torch._tensor_str import PRINT_OPTS

    if tensor.numel() <= PRINT_OPTS.threshold:
        return tensor.numel()
    shown = 1
    for size in tensor.shape:
        shown *= min(size, 2 * PRINT_OPTS.edgeitems)
    return shown


class HostReadMode(TorchFunctionMode):
    """Sees the reads that never reach the dispatcher: ``numpy()``, ``tolist()``, ``__array__``."""

    def __init__(self, policy: PolicyMode) -> None:
        super().__init__()
        self.policy = policy

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.policy.refuse_foreign((args, kwargs))
        name = getattr(func, "__name__", "")
        if name in PRINTING_METHODS and args and isinstance(args[0], torch.Tensor) \
                and _origin(sys._getframe(1), self.policy.paused > 0):
            self.policy.count_host(f"{name}() of tensor data (its printed values)", _printed(args[0]))
        elif name in ELEMENT_CALLBACKS and _origin(sys._getframe(1), self.policy.paused > 0):
            read = sum(a.numel() for a in args if isinstance(a, torch.Tensor))
            self.policy.count_host(f"{name}() of tensor data (a Python function of each element)", read)
        elif name in HOST_READ_METHODS and args and isinstance(args[0], torch.Tensor) \
                and _origin(sys._getframe(1), self.policy.paused > 0):
            tensor = args[0]
            whole = name in WHOLE_STORAGE_READS and tensor.layout == torch.strided
            elements = storage_elements(tensor.untyped_storage(), tensor) if whole else tensor.numel()
            self.policy.count_host(f"{name}() of tensor data", max(elements, tensor.numel()))
        return func(*args, **(kwargs or {}))


_active: list[PolicyMode] = []
_threads = threading.local()
"""The ``ThreadMode`` of a thread the candidate started, on that thread (see ``thread_watch``)."""


def _launching_here() -> tuple[PolicyMode, ...]:
    """The modes a launch on this thread pauses: the candidate thread's own, or the worker's watches."""
    mode = getattr(_threads, "mode", None)
    return (mode,) if mode is not None else tuple(_active)


def _refuse_foreign(tree: Any, modes: tuple[PolicyMode, ...]) -> None:
    """Raise on a tensor or storage of ``tree`` the worker may not call methods on (``tensor_objects``),
    counted first in ``modes``, so the refusal stands even where the candidate catches the error."""
    foreign = tensor_objects.first_foreign(tree)
    if foreign is not None:
        for mode in modes:
            mode.ops[f"an op on {foreign}"] += 1
        raise RuntimeError(f"the worker refuses {foreign}")


def refuse_foreign(tree: Any) -> None:
    """``PolicyMode.refuse_foreign`` for code outside the modes (a host route's counter): counted in each
    watch on this thread, and refused in any case."""
    _refuse_foreign(tree, _launching_here())


def count_kernel_print(elements: int) -> None:
    """Values a kernel printed in the interpreter (a Python print the candidate can capture): counted in
    each watch on this thread as read by host code, whoever's frame is nearest (Triton's, during a launch)."""
    for mode in _launching_here():
        mode.count_host("device_print() in a kernel (its printed values)", elements)


def count_host_route(route: str, elements: int, frame: Any) -> None:
    """A host data route outside the modes' sight (``host_routes.py``), counted in each watch on this
    thread where the candidate's code took it."""
    for mode in _launching_here():
        if _origin(frame, mode.paused > 0):
            mode.count_host(route, elements)


class paused:
    """Context manager: the host-op policy does not watch what runs inside (kernel launches)."""

    def __enter__(self) -> None:
        self.modes = _launching_here()
        for mode in self.modes:
            mode.paused += 1

    def __exit__(self, *exc: object) -> None:
        for mode in self.modes:
            mode.paused -= 1


class watching:
    """Context manager running a call under a fresh PolicyMode; yields the mode."""

    def __init__(self, mode: PolicyMode | None = None) -> None:
        self.mode = mode or PolicyMode()
        self.reads = HostReadMode(self.mode)

    def __enter__(self) -> PolicyMode:
        if not isinstance(self.mode, ThreadMode):
            _active.append(self.mode)
        self.reads.__enter__()
        self.mode.__enter__()
        return self.mode

    def __exit__(self, *exc: object) -> None:
        self.mode.left_modes += _restore_stacks(self.mode, self.reads)
        if _on_stack(self.mode):  # else its exit, which pops by position, would take another mode off
            self.mode.__exit__(*exc)
        if _on_stack(self.reads):
            self.reads.__exit__(*exc)
        if not isinstance(self.mode, ThreadMode):
            _active.remove(self.mode)


def foreign_modes() -> list[str]:
    """Modes on either of PyTorch's stacks now that are not the harness's own."""
    modes = [*_get_current_dispatch_mode_stack(), *_get_current_function_mode_stack()]
    return [type(m).__name__ for m in modes if not type(m).__module__.startswith("warpgym.")]


def _stack_of(mode: Any) -> list[Any]:
    return _get_current_dispatch_mode_stack() if isinstance(mode, TorchDispatchMode) else \
        _get_current_function_mode_stack()


def _on_stack(mode: Any) -> bool:
    return any(m is mode for m in _stack_of(mode))


def _restore_stacks(dispatch: TorchDispatchMode, function: Any) -> list[str]:
    """Pop every mode the watched code left above the watch's own, on both of PyTorch's mode stacks, and
    say so of each, as the tamper report words it. A mode left there would run after the watch, in whatever
    PyTorch call the harness made next (copying the outputs back answers through a ``TorchFunctionMode``);
    leaving the watch would also pop it instead of the watch's own, which pops by position. A watch's mode
    that is gone is named too."""
    # Taken as called: the sandbox guards PyTorch's pops, and passes the harness's own calls through.
    from torch.overrides import _pop_mode as pop_function_mode
    from torch.utils._python_dispatch import _pop_mode as pop_dispatch_mode

    left = []
    for own, pop in ((dispatch, pop_dispatch_mode), (function, pop_function_mode)):
        if not _on_stack(own):
            left.append(f"the watch's own {type(own).__name__} was taken off PyTorch's mode stack")
            continue
        while _stack_of(own)[-1] is not own:
            name = type(pop()).__name__
            left.append(f"a PyTorch mode left active after the candidate's code returned ({name})")
    return left


def thread_watch(function: Any) -> Any:
    """``function`` as a thread body watched like the call it serves (the sandbox wraps every thread the
    candidate starts with this)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        mode = ThreadMode()
        _threads.mode = mode
        try:
            with watching(mode):
                return function(*args, **kwargs)
        finally:
            _threads.mode = None

    return run


def _content(value: Any) -> Any:
    """What a module global holds, for comparing: containers by content, everything else by identity."""
    if isinstance(value, dict):
        return ("dict", id(value), tuple(sorted((str(k), _content(v)) for k, v in value.items())))
    if isinstance(value, list | set | frozenset | tuple):
        items = sorted(map(repr, value)) if isinstance(value, set | frozenset) else list(map(_content, value))
        return (type(value).__name__, id(value), tuple(items))
    return ("id", id(value))


def state() -> tuple[Any, ...]:
    """Everything the policy's verdicts depend on: this module's globals (data included: the allowed-op
    set, the limits, the kernel tables, the list of active watches) and its classes' methods. The worker
    compares it before and after every candidate call, so rebinding or mutating any of it is seen."""
    module = sys.modules[__name__]
    names = sorted(n for n in vars(module) if not n.startswith("__"))
    classes = (PolicyMode, ThreadMode, HostReadMode, paused, watching)
    return (tuple((n, _content(getattr(module, n))) for n in names),
            tuple(tuple(sorted((k, id(v)) for k, v in vars(c).items())) for c in classes))
