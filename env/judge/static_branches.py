"""Which branches of a candidate never run on the devices judged here, read off the source.

The static scan uses this to leave a PyTorch call in such a branch (``if False:``, a path for Intel
XPU or Apple MPS) to the run-time policy, which sees what really runs: the conditions read here can
be faked (a class whose ``type`` is ``"xpu"``), so they only ever silence early feedback, never a check.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

JUDGED_DEVICES = frozenset({"cpu", "cuda", "meta"})
"""The device types a candidate's tensors can have here: a branch taken only on another one never runs."""
DEVICE_FLAGS = frozenset({"is_xpu", "is_mps", "is_mtia", "is_hpu", "is_ipu", "is_xla", "is_vulkan"})
"""Tensor attributes true only on another backend (``x.is_xpu``)."""
OTHER_BACKENDS = frozenset({"torch.xpu", "torch.mps", "torch.mtia", "torch.backends.mps"})
"""Modules whose ``is_available()`` is false on every machine judged here."""

Resolve = Callable[[ast.AST], "str | None"]


def _is_device_type(node: ast.AST) -> bool:
    """``x.device.type``, ``device.type``: the name of a device type."""
    return isinstance(node, ast.Attribute) and node.attr == "type"


def _strings(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _other_device(node: ast.Compare) -> bool | None:
    """For ``<device type> == "xpu"`` (either side, or ``in`` a tuple of names): True when the test holds
    only on devices not judged here, False when it holds on every judged one, None when it says neither."""
    if len(node.ops) != 1:
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if _is_device_type(right) and isinstance(op, ast.Eq | ast.NotEq):
        left, right = right, left
    names = _strings(right)
    if not _is_device_type(left) or names is None or JUDGED_DEVICES.intersection(names):
        return None
    if isinstance(op, ast.Eq | ast.In) and (isinstance(op, ast.In) or len(names) == 1):
        return True
    if isinstance(op, ast.NotEq | ast.NotIn) and (isinstance(op, ast.NotIn) or len(names) == 1):
        return False
    return None


def never_true(test: ast.AST, resolve: Resolve) -> bool:
    """The condition is false on every device judged here (and always, for a false constant)."""
    if isinstance(test, ast.Constant):
        return not test.value
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return always_true(test.operand, resolve)
    if isinstance(test, ast.BoolOp):
        parts = [never_true(v, resolve) for v in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.Compare):
        return _other_device(test) is True
    if isinstance(test, ast.Attribute):
        return test.attr in DEVICE_FLAGS
    if isinstance(test, ast.Call) and not test.args:
        name = resolve(test.func) or ""
        module, _, query = name.rpartition(".")
        return query == "is_available" and module in OTHER_BACKENDS
    return False


def always_true(test: ast.AST, resolve: Resolve) -> bool:
    """The condition holds on every device judged here: its ``else`` never runs."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return never_true(test.operand, resolve)
    if isinstance(test, ast.BoolOp):
        parts = [always_true(v, resolve) for v in test.values]
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    if isinstance(test, ast.Compare):
        return _other_device(test) is False
    return False
