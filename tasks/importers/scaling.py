"""Smaller sizes for an imported problem: its module-level size constants, shifted down.

The rule (docs/importers.md): a size constant is a module-level assignment of an integer literal (or an
arithmetic expression of literals, or a tuple of them) of at least ``SIZE_MIN``; smaller integers
(dimensions to reduce over, kernel sizes, strides, groups) are left alone. Shift ``k`` maps each size
``c`` to ``max(SIZE_MIN, c >> k)``, the same shift for every size, so ratios and divisibility by powers
of two mostly survive. ``dev`` takes the smallest shift whose tensors (inputs, outputs, parameters) hold
at most ``DEV_ELEMENTS`` elements; ``heldout`` the smallest other shift within ``HELDOUT_ELEMENTS``. A
shift at which the problem fails to build or run is skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

SIZE_MIN = 16
DEV_ELEMENTS = 1 << 16
HELDOUT_ELEMENTS = 1 << 17
MAX_SHIFT = 24

Constant = int | tuple[int, ...]


def _literal(node: ast.expr) -> Any:
    """The value of an integer expression of literals (``2048 * 2``, ``16 * 1024``), a tuple of them, or
    None for anything else (names, calls, floats)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Tuple):
        items = [_literal(e) for e in node.elts]
        return tuple(items) if items and all(type(i) is int for i in items) else None
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, ast.Mult | ast.Add | ast.Sub | ast.FloorDiv | ast.Pow | ast.LShift
    ):
        left, right = _literal(node.left), _literal(node.right)
        if type(left) is int and type(right) is int and not (isinstance(node.op, ast.Pow) and right > 64):
            ops: dict[type, Callable[[int, int], int]] = {
                ast.Mult: lambda a, b: a * b,
                ast.Add: lambda a, b: a + b,
                ast.Sub: lambda a, b: a - b,
                ast.FloorDiv: lambda a, b: a // b if b else 0,
                ast.Pow: lambda a, b: a**b,
                ast.LShift: lambda a, b: a << b if b < 64 else 0,
            }
            return ops[type(node.op)](left, right)
    return None


def _is_size(value: Any) -> bool:
    if type(value) is int:
        return value >= SIZE_MIN
    return isinstance(value, tuple) and any(v >= SIZE_MIN for v in value)


def size_constants(tree: ast.Module) -> dict[str, Constant]:
    """The module's size constants by name, in the order assigned (the last assignment wins)."""
    found: dict[str, Constant] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        value = _literal(node.value)
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        for name in names:
            found.pop(name, None)
            if value is not None and _is_size(value) and len(names) == len(node.targets):
                found[name] = value
    return found


def shifted(constants: dict[str, Constant], k: int) -> dict[str, Constant]:
    def one(c: int) -> int:
        return max(SIZE_MIN, c >> k) if c >= SIZE_MIN else c

    return {n: one(v) if type(v) is int else tuple(one(x) for x in v) for n, v in constants.items()}


def with_constants(tree: ast.Module, values: dict[str, Any]) -> ast.Module:
    """A copy of the module whose size constants are assigned ``values`` instead (derived constants such
    as ``shape = (dim,)`` follow, since they are computed from these)."""
    import copy

    new = copy.deepcopy(tree)
    for node in new.body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if names and names[0] in values and _literal(node.value) is not None:
                node.value = ast.copy_location(
                    ast.Constant(values[names[0]])
                    if type(values[names[0]]) is int
                    else ast.Tuple([ast.Constant(v) for v in values[names[0]]], ast.Load()),
                    node.value,
                )
    return ast.fix_missing_locations(new)


def choose(
    constants: dict[str, Constant], elements: Callable[[dict[str, Constant]], int | None]
) -> tuple[dict[str, Constant] | None, dict[str, Constant] | None, str]:
    """(dev, heldout, how) for a problem: ``elements(sizes)`` counts its tensors' elements at those sizes,
    None where it fails there. None for a set that no shift gives."""
    if not constants:
        return None, None, "it has no module-level size constants: dev and heldout use its own sizes"
    measured: dict[int, int] = {}
    seen: set[tuple[Any, ...]] = set()
    for k in range(MAX_SHIFT + 1):
        sizes = shifted(constants, k)
        key = tuple(sizes.values())
        if key in seen:
            continue  # every size is at the floor already
        seen.add(key)
        count = elements(sizes)
        if count is not None:
            measured[k] = count
    if not measured:
        return None, None, "it fails at every smaller size: dev and heldout use its own sizes"
    fitting = [k for k, n in measured.items() if n <= DEV_ELEMENTS]
    dev_k = fitting[0] if fitting else min(measured, key=lambda k: measured[k])
    others = [k for k, n in measured.items() if k != dev_k and n <= HELDOUT_ELEMENTS]
    held_k = (
        others[0]
        if others
        else next((k for k in sorted(measured, key=lambda k: abs(k - dev_k)) if k != dev_k), None)
    )
    how = (
        f"dev: its size constants shifted right by {dev_k} bits ({measured[dev_k]} tensor elements)"
        + (
            f"; heldout: by {held_k} ({measured[held_k]} elements)"
            if held_k is not None
            else "; heldout: the same sizes (no other shift runs)"
        )
        + f"; sizes below {SIZE_MIN} are kept, none goes below {SIZE_MIN}"
    )
    dev = shifted(constants, dev_k)
    return dev, shifted(constants, held_k) if held_k is not None else dev, how
