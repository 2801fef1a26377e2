"""Smaller sizes for an imported problem: its module-level size constants, shifted down.

The rule (docs/importers.md): a size constant is a module-level assignment of an integer literal (or an
arithmetic expression of literals, or a tuple or list of them, or one name of ``D, H, W = 16, 32, 32``) of
at least ``SIZE_MIN``; smaller integers
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
    if isinstance(node, ast.Tuple | ast.List):
        items = [_literal(e) for e in node.elts]
        # a list is a tuple here too (a case is hashable); written back as a list (``with_constants``)
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


def _assigned(node: ast.Assign) -> list[tuple[str, ast.expr]]:
    """(name, value expression) of each name a module-level assignment binds to a value of its own:
    ``n = 4096``, ``a = b = 4096``, and each name of ``D, H, W = 16, 32, 32``."""
    if _unpacked(node):
        names, values = node.targets[0].elts, node.value.elts  # type: ignore[attr-defined]
        if len(names) == len(values) and all(isinstance(n, ast.Name) for n in names):
            return [(n.id, v) for n, v in zip(names, values, strict=True)]  # type: ignore[attr-defined]
        return []
    if all(isinstance(t, ast.Name) for t in node.targets):
        return [(t.id, node.value) for t in node.targets]  # type: ignore[attr-defined]
    return []


def _unpacked(node: ast.Assign) -> bool:
    one = len(node.targets) == 1
    return one and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple)


def _bound(node: ast.Assign) -> list[str]:
    """Every plain name an assignment binds (unpacked or not)."""
    names = []
    for target in node.targets:
        elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        names += [e.id for e in elts if isinstance(e, ast.Name)]
    return names


def size_constants(tree: ast.Module) -> dict[str, Constant]:
    """The module's size constants by name, in the order assigned (the last assignment wins)."""
    found: dict[str, Constant] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for name in _bound(node):
            found.pop(name, None)
        for name, expr in _assigned(node):
            value = _literal(expr)
            if value is not None and _is_size(value):
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

    def node_of(value: Any, like: ast.expr) -> ast.expr:
        if type(value) is int:
            made: ast.expr = ast.Constant(value)
        elif isinstance(like, ast.List):
            made = ast.List([ast.Constant(v) for v in value], ast.Load())
        else:
            made = ast.Tuple([ast.Constant(v) for v in value], ast.Load())
        return ast.copy_location(made, like)

    new = copy.deepcopy(tree)
    for node in new.body:
        if not isinstance(node, ast.Assign):
            continue
        pairs = _assigned(node)
        if pairs and _unpacked(node):  # D, H, W = 16, 32, 32: each element on its own
            node.value.elts = [node_of(values[n], e) if n in values and _literal(e) is not None else e
                               for n, e in pairs]  # type: ignore[attr-defined]
        elif pairs and pairs[0][0] in values and _literal(node.value) is not None:
            node.value = node_of(values[pairs[0][0]], node.value)
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
