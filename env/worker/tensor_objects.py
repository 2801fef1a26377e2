"""Which tensor objects the worker's own code may call methods on.

Code the worker runs on the candidate's behalf calls methods on the candidate's tensors: the run-time
policy's handlers (with every mode off), the launch recorder, the host-route counters, and Triton's runtime
during a launch (which the policy does not watch). A tensor subclass's methods or ``__torch_function__``, or
an entry of a plain tensor's own ``__dict__`` that shadows a method of the class (``t.storage_offset = f``),
would run the candidate's code there, unwatched. So each such place first asks ``foreign_tensor``, which
reads only the object's type and its own dictionary, and refuses what it names.
"""

from __future__ import annotations

from typing import Any

import torch

PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
"""A module's parameter is a plain tensor to every method the worker calls."""
PLAIN_STORAGES = (torch.UntypedStorage, torch.TypedStorage)
_STORAGE_OF = torch._C.TensorBase.untyped_storage
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
"""Taken at import, before any candidate runs: the storage is read with no torch-function mode told (one
would count it as a read of the data)."""


def _shadowing(value: Any, cls: type, what: str) -> str | None:
    names = sorted(map(str, (k for k in vars(value) if type(k) is not str or hasattr(cls, k))))
    if names:
        shown = ", ".join(names)
        return (f"{what} carrying attributes of its own that shadow the class's methods ({shown}): whoever "
                "calls them runs the candidate's code")
    return None


def foreign_storage(value: Any, what: str = "a storage") -> str | None:
    """Why the worker may not call methods on ``value``, a storage (a tensor's, or one given to ``set_``)."""
    kind = type(value)
    if kind not in PLAIN_STORAGES:
        return f"{what} of the class {kind.__name__} (a subclass: its methods are the candidate's code)"
    return _shadowing(value, kind, what)


def foreign_tensor(value: Any) -> str | None:
    """Why the worker may not call methods on ``value``, a tensor, or on its storage (the same object for
    every view of it, which Triton's runtime and the memory watch ask for its size and its host copy); None
    for a plain one."""
    kind = type(value)
    if kind not in PLAIN_TYPES:
        return f"a tensor of the class {kind.__name__} (a subclass: its methods are the candidate's code)"
    found = _shadowing(value, torch.Tensor, "a tensor")
    if found is None:
        try:
            with _NO_TORCH_FUNCTION():
                storage = _STORAGE_OF(value)
        except (RuntimeError, NotImplementedError):  # a sparse or nested tensor has no storage to ask
            return None
        found = foreign_storage(storage, "the storage of a tensor")
    return found


def first_foreign(tree: Any, depth: int = 0) -> str | None:
    """``foreign_tensor`` (or ``foreign_storage``) of the first tensor or storage in nested tuples, lists and
    dicts that is not plain."""
    if isinstance(tree, torch.Tensor):
        return foreign_tensor(tree)
    if isinstance(tree, (torch.TypedStorage, torch._C.StorageBase)):  # UntypedStorage is a StorageBase
        return foreign_storage(tree)
    if depth < 4 and type(tree) in (tuple, list):
        return next(filter(None, (first_foreign(v, depth + 1) for v in tree)), None)
    if depth < 4 and type(tree) is dict:
        return next(filter(None, (first_foreign(v, depth + 1) for v in tree.values())), None)
    return None
