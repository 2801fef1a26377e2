"""Host data routes that PyTorch's modes never see: C functions that hand a tensor's memory to host code
(``to_dlpack``) or build a tensor over host bytes (``frombuffer``, ``from_dlpack``). Each is replaced,
wherever a loaded PyTorch module holds it, by one that counts what it moves, as the run-time policy counts
``numpy()`` and ``torch.tensor``: without it, NumPy could compute an answer from a capsule of the inputs
and hand it back through a buffer, with nothing counted."""

from __future__ import annotations

import functools
import sys
from typing import Any

from warpgym.env.worker import dispatch_guard, policy

READS = {"_to_dlpack": "to_dlpack() of tensor data", "_to_dlpack_versioned": "to_dlpack() of tensor data"}
"""``torch._C`` functions that give host code a tensor's whole storage."""
BUILDS = {"_from_dlpack": "tensors built from Python data (from_dlpack)",
          "frombuffer": "tensors built from Python data (frombuffer)"}
"""``torch._C`` (and ``torch``) functions that make a tensor over memory host code filled."""


def _counted(original: Any, route: str, read: bool) -> Any:
    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> Any:
        policy.refuse_foreign((args, kwargs))  # before any method of the tensor is called here
        result = original(*args, **kwargs)
        source = args[0] if read and args else result
        import torch

        if isinstance(source, torch.Tensor):
            elements = policy.storage_elements(source.untyped_storage(), source) if read else source.numel()
            policy.count_host_route(route, elements, sys._getframe(1))
        return result

    counted._warpgym_route = True  # type: ignore[attr-defined]
    return counted


def _install_kernel_prints() -> list[str]:
    """Triton's interpreter runs a kernel's ``device_print`` as a Python print of the values, which the
    candidate can capture (``sys.stdout``): each print counts the values it shows as read by host code."""
    try:
        from triton.runtime.interpreter import InterpreterBuilder
    except ImportError:
        return []
    original = InterpreterBuilder.create_print
    if getattr(original, "_warpgym_route", False):
        return []

    @functools.wraps(original)
    def create_print(self: Any, prefix: Any, hex: Any, values: Any, *rest: Any) -> Any:
        policy.count_kernel_print(sum(int(getattr(getattr(v, "data", None), "size", 1)) for v in values))
        return original(self, prefix, hex, values, *rest)

    create_print._warpgym_route = True  # type: ignore[attr-defined]
    InterpreterBuilder.create_print = create_print  # type: ignore[method-assign]
    return ["triton.runtime.interpreter.InterpreterBuilder.create_print"]


def install() -> list[str]:
    """Replace each route wherever a loaded PyTorch module holds it, and count the interpreter's kernel
    prints; the names replaced."""
    import torch

    originals: dict[int, tuple[Any, str, bool]] = {}
    for names, read in ((READS, True), (BUILDS, False)):
        for name, route in names.items():
            for home in (torch._C, torch):
                value = getattr(home, name, None)
                if value is not None and not getattr(value, "_warpgym_route", False):
                    originals.setdefault(id(value), (value, route, read))
    replaced = dispatch_guard.replace_in_torch_modules(
        {key: (value, _counted(value, route, read)) for key, (value, route, read) in originals.items()})
    return sorted(replaced + _install_kernel_prints())
