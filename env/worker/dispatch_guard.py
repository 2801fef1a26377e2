"""PyTorch's switches that hide ops from the run-time policy, refused to the candidate's own code.

The policy (``policy.py``) sees ops through a dispatch mode and host reads through a torch-function mode.
PyTorch has public-but-private ways to step around both: turning the Python dispatch key or torch-function
handling off for a block, popping the modes off their stacks, or redispatching an op below the Python key.
Its own code uses them (a mode's ``__exit__`` pops itself), so they are not removed: each is replaced,
wherever a PyTorch module holds it, by a wrapper that refuses a call whose nearest caller outside the
standard library is the candidate's module, and records the attempt with the sandbox, which the verdict
turns into a violation even when the candidate catches the error.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from warpgym.env.worker import audit

C_SWITCHES = (
    "_DisableTorchDispatch", "DisableTorchFunction", "_ExcludeDispatchKeyGuard", "ExcludeDispatchKeyGuard",
    "_SetExcludeDispatchKeyGuard", "_ForceDispatchKeyGuard", "_dispatch_tls_set_dispatch_key_excluded",
    "_dispatch_tls_set_dispatch_key_included", "_pop_torch_dispatch_stack", "_pop_torch_function_stack",
    "_unset_dispatch_mode", "_set_torch_function_state", "_disabled_torch_function_impl",
    "_disabled_torch_dispatch_impl", "_set_skip_next_torch_function",
)
"""``torch._C`` entries that turn the Python dispatch key or torch-function modes off, or pop a mode."""
PYTHON_SWITCHES = {
    "torch.utils._python_dispatch": ("_disable_current_modes", "_pop_mode", "_pop_mode_temporarily",
                                     "_disable_infra_mode", "_unset_infra_mode"),
    "torch.overrides": ("_pop_mode", "_pop_mode_temporarily"),
    "torch.utils._mode_utils": ("no_dispatch",),
}
"""PyTorch's Python helpers over those switches."""
METHODS = (("torch._ops", "OpOverload", "redispatch"),
           ("torch._C", "_DispatchOperatorHandle", "redispatch_boxed"))
"""Calls that start dispatch below the Python key: an op run there is seen by no mode."""

_CANDIDATE_PREFIX = audit.candidate_prefix()
_OWN = frozenset({__file__, os.path.realpath(__file__)})


@functools.cache
def _owners() -> tuple[str, ...]:
    """PyTorch's, Triton's and the harness's folders, as imported and as resolved: their own use of a
    switch is theirs."""
    import torch
    import triton

    folders = (os.path.dirname(torch.__file__), os.path.dirname(triton.__file__), audit.ENV_DIR)
    return tuple(dict.fromkeys(p + os.sep for f in folders for p in (f, os.path.realpath(f))))


_HARNESS = (audit.ENV_DIR + os.sep, os.path.realpath(audit.ENV_DIR) + os.sep)


def _candidate_called(frame: Any) -> bool:
    """Walking out from the call: the candidate's module or a request handler (a finalizer's callback)
    before PyTorch, Triton or the harness. Other code (the standard library, NumPy, any package that
    calls a callable it was handed) is walked through, so a switch handed to it is still the candidate's;
    so are PyTorch's decorators that call what they wrap (``torch.no_grad()(switch)``)."""
    passed = _callers()
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_CANDIDATE_PREFIX) or name in audit.HANDLER_FILES:
            return True
        if name not in _OWN and name not in passed and name.startswith(_owners()):
            return name.startswith(_HARNESS) and not audit.runs_its_own_file(frame)
        frame = frame.f_back
    return False


@functools.cache
def _callers() -> frozenset[str]:
    """PyTorch's files whose code calls a callable it was handed, and uses no switch of its own."""
    import torch.utils._contextlib as wrappers

    return frozenset({wrappers.__file__, os.path.realpath(wrappers.__file__)})


def _guarded(original: Any, what: str) -> Any:
    @functools.wraps(original)
    def refuse_to_candidate(*args: Any, **kwargs: Any) -> Any:
        if _candidate_called(sys._getframe(1)):
            audit.report("torch-internals", f"turning off what the run-time policy sees ({what})")
            raise PermissionError(f"warpgym sandbox: {what} is not allowed in a candidate")
        return original(*args, **kwargs)

    refuse_to_candidate._warpgym_guard = True  # type: ignore[attr-defined]
    return refuse_to_candidate


def replace_in_torch_modules(replacements: dict[int, tuple[Any, Any]]) -> list[str]:
    """Put each replacement (keyed by its original's ``id``) wherever a loaded PyTorch module holds the
    original, since ``from torch._C import f`` keeps a reference no single ``setattr`` reaches; the names
    replaced."""
    replaced = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("torch"):
            continue
        for attr, value in list(vars(module).items()):
            entry = replacements.get(id(value))
            if entry is not None and value is entry[0]:
                setattr(module, attr, entry[1])
                replaced.append(f"{module_name}.{attr}")
    return sorted(replaced)


def install() -> list[str]:
    """Replace every switch wherever a loaded PyTorch module holds it; the names guarded."""
    import torch

    originals: dict[int, tuple[Any, str]] = {}
    for name in C_SWITCHES:
        value = getattr(torch._C, name, None)
        if value is not None:
            originals[id(value)] = (value, f"torch._C.{name}")
    for module_name, names in PYTHON_SWITCHES.items():
        module = sys.modules.get(module_name) or __import__(module_name, fromlist=["_"])
        for name in names:
            value = getattr(module, name, None)
            if value is not None:
                originals.setdefault(id(value), (value, f"{module_name}.{name}"))
    wrappers = {key: (value, _guarded(value, what)) for key, (value, what) in originals.items()}
    replace_in_torch_modules(wrappers)
    guarded = sorted(what for _, what in originals.values())
    for module_name, cls_name, method in METHODS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        original = getattr(cls, method, None)
        if original is not None and not getattr(original, "_warpgym_guard", False):
            setattr(cls, method, _guarded(original, f"{cls_name}.{method}"))
            guarded.append(f"{module_name}.{cls_name}.{method}")
    return guarded
