"""What a task is, as one hash: a verdict reached on a task is reused only for the same task.

A task's id names it, but two suites may share an id (imported suites from two folders) and a task's
reference, tolerances or shapes may be edited under one version. Caches of verdicts key on this hash
beside the id. An imported problem is its file's text and the rule that chose its sizes; a built-in
task is its statement, the code of its functions (reference, input builder, check, counts, vendor) with
the values they close over, and every field that changes how it is judged.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import types
from typing import Any

from .spec import Task

MAX_DEPTH = 6
"""How deep a function's helpers are followed (closures, the module-level functions it calls)."""

_SIMPLE = (str, int, float, bool, type(None))


def task_fingerprint(task: Task) -> str:
    """A hash of what the task judges: equal for the same task, different when what it asks or how it is
    checked differs."""
    judged = {
        "id": task.id, "entrypoint": task.entrypoint, "signature": task.signature,
        "dtypes": task.dtypes, "shapes": task.shapes, "language": task.language,
        "tolerances": {k: dataclasses.astuple(v) for k, v in sorted(task.tolerances.items())},
        "distributions": task.distributions, "seeds": task.seeds,
        "required_features": task.required_features, "baselines": task.baselines,
        "vendor_name": task.vendor_name, "reference_precision": task.reference_precision,
        "contiguous_outputs": task.contiguous_outputs, "layout": task.layout,
        "host_moves": task.host_moves,
    }
    if task.model is not None:
        model = task.model
        judged["model"] = [model.format, model.source, model.sizes_note, model.params, model.class_name]
    else:
        judged["statement"] = task.statement()
        judged["code"] = [
            _describe(fn, 0, set())
            for fn in (task.reference, task.make_inputs, task.check, task.flops, task.bytes, task.vendor)
        ]
    blob = json.dumps(judged, sort_keys=True, default=_plain)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(value: Any) -> str:
    """Values json cannot write (a dtype in a case): their text, never an address."""
    return _value(value)


def _describe(obj: Any, depth: int, seen: set[int]) -> Any:
    """A function as its source, defaults, the values it closes over and the module-level helpers and
    constants it names; anything else as a value."""
    if isinstance(obj, types.MethodType):
        return ["method", _describe(obj.__func__, depth, seen)]
    if isinstance(obj, functools.partial):
        return ["partial", _describe(obj.func, depth, seen), _value(obj.args), _value(obj.keywords)]
    if not isinstance(obj, types.FunctionType):
        return _value(obj)
    if id(obj) in seen or depth > MAX_DEPTH:
        return ["seen", obj.__module__, obj.__qualname__]
    seen.add(id(obj))
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        source = obj.__code__.co_code.hex()
    cells = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
    named = {}
    for name in sorted(_names(obj.__code__)):
        value = obj.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value.__module__ == obj.__module__:
            named[name] = _describe(value, depth + 1, seen)
        elif isinstance(value, (*_SIMPLE, tuple)) or dataclasses.is_dataclass(value):
            named[name] = _value(value)
    return {
        "source": source,
        "defaults": _value(obj.__defaults__), "kwdefaults": _value(obj.__kwdefaults__),
        "closure": [_describe(c, depth + 1, seen) for c in cells],
        "globals": named,
    }


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _value(value: Any) -> Any:
    """A value by its content; an object without one (a module, a class, a builtin) by its name, since its
    default text holds an address that differs in every process."""
    if isinstance(value, _SIMPLE):
        return value
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):  # its order follows string hashing, which differs per process
        return sorted((_value(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__qualname__, _value(dataclasses.astuple(value))]
    if isinstance(value, types.FunctionType | functools.partial):
        return _describe(value, MAX_DEPTH, set())
    text = repr(value)
    if " at 0x" in text or text.startswith("<"):
        module = getattr(value, "__module__", None) or type(value).__module__
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        return f"{module}.{name or type(value).__qualname__}"
    return text
