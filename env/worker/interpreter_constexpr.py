"""Triton's interpreter, made to find a kernel's constexpr parameters by the compiler's rule.

The interpreter runs each kernel from its source again, compiled under its own module's ``from
__future__ import annotations``, so the annotations reach it as text, and it takes a parameter for a
constexpr only when that text is exactly ``tl.constexpr`` or ``constexpr``. A kernel written with
``import triton.language as language`` (``BLOCK: language.constexpr``) or ``triton.language.constexpr``
then gets its block size as a tensor and fails in ``arange``, while the compiler, whose rule is
"constexpr" anywhere in the annotation (``KernelParam.is_constexpr``), compiles it. The worker applies
the compiler's rule, so no spelling of ``triton.language`` fails on the CPU only.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


def install() -> None:
    """Patch the interpreter's grid executor (a no-op where it is absent or already patched)."""
    from triton.runtime import interpreter
    from triton.runtime.jit import _normalize_ty

    executor = getattr(interpreter, "GridExecutor", None)
    original = getattr(executor, "__init__", None)
    if executor is None or original is None or getattr(original, "compiler_rule", False):
        return

    @functools.wraps(original)
    def init(self: Any, fn: Any, arg_names: list[str], *args: Any, **kwargs: Any) -> None:
        original(self, fn, arg_names, *args, **kwargs)
        if hasattr(self, "constexprs"):
            annotations = inspect.get_annotations(fn)
            self.constexprs = [name for name in arg_names
                               if name in annotations and "constexpr" in _normalize_ty(annotations[name])]

    init.compiler_rule = True  # type: ignore[attr-defined]
    executor.__init__ = init
