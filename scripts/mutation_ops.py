"""Source transformations that turn a correct Triton kernel into the broken variants real kernels ship with.

Each operator takes a module's AST and yields one mutant per site it matches, as ``Mutant`` (the site's
key, a description and the mutated source). Sites are found by shape, not by name, except where the
bug is defined by a name's role (an ``eps`` added under a root, a ``mean`` subtracted before squaring).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "reduce", "xor_sum"}
ROOTS = {"sqrt", "rsqrt", "sqrt_rn"}
EXPS = {"exp", "exp2"}


@dataclass(frozen=True)
class Mutant:
    operator: str
    site: str
    """Where in the original source: ``L<line>:<column>``, stable while the source is."""
    what: str
    source: str


def is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _jit_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and is_jit(n)]


def _host_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and not is_jit(n)]


def _attr(node: ast.AST) -> str | None:
    """The called name of ``tl.exp(...)``, ``tl.math.exp2(...)``, ``exp(...)``."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        return func.id if isinstance(func, ast.Name) else None
    return None


def _site(node: ast.AST) -> str:
    return f"L{node.lineno}:{node.col_offset}"


def _rewrite(tree: ast.Module, target: ast.AST, replace: Callable[[ast.AST], ast.AST | None]) -> str:
    """The source of ``tree`` with the node at ``target``'s position replaced (a deep copy is changed)."""
    copied = copy.deepcopy(tree)
    path = _path_to(tree, target)
    parent, field, index = None, None, None
    node: ast.AST = copied
    for field_, index_ in path:
        parent, field, index = node, field_, index_
        value = getattr(node, field_)
        node = value[index_] if index_ is not None else value
    new = replace(node)
    if new is None:
        new = ast.Pass()
    value = getattr(parent, field)
    if index is None:
        setattr(parent, field, new)
    else:
        value[index] = new
    return ast.unparse(ast.fix_missing_locations(copied))


def _path_to(tree: ast.AST, target: ast.AST) -> list[tuple[str, int | None]]:
    def search(node: ast.AST, path: list[tuple[str, int | None]]) -> list[tuple[str, int | None]] | None:
        if node is target:
            return path
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST) and (found := search(item, [*path, (field, i)])) is not None:
                        return found
            elif isinstance(value, ast.AST) and (found := search(value, [*path, (field, None)])) is not None:
                return found
        return None

    found = search(tree, [])
    if found is None:
        raise ValueError("node not in tree")
    return found


# ---------------------------------------------------------------------------------------------- operators

def mask_off_by_one(tree: ast.Module) -> Iterator[Mutant]:
    """``a < b`` becomes ``a <= b``: the bound check that lets one lane too many through."""
    for fn in _jit_functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt):
                def widen(n: ast.AST) -> ast.AST:
                    n.ops = [ast.LtE()]
                    return n
                yield Mutant("mask-off-by-one", _site(node), ast.unparse(node), _rewrite(tree, node, widen))


def _rescale_names(fn: ast.FunctionDef) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _attr(node.value) in EXPS:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _is_rescale(node: ast.AST, names: set[str]) -> bool:
    if _attr(node) in EXPS:
        return True
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id in names


def missing_online_rescale(tree: ast.Module) -> Iterator[Mutant]:
    """``s = s * exp(m_old - m_new) + ...`` loses its ``* exp(...)``: the running sum (or accumulator) is not
    rescaled when the running max grows, which only shows when a later block holds a larger maximum."""
    for fn in _jit_functions(tree):
        names = _rescale_names(fn)
        for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For | ast.While)):
            for stmt in ast.walk(loop):
                if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Mult) \
                        and isinstance(stmt.target, ast.Name) and _is_rescale(stmt.value, names):
                    yield Mutant("missing-online-rescale", _site(stmt), ast.unparse(stmt),
                                 _rewrite(tree, stmt, lambda n: None))
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name)):
                    continue
                target = stmt.targets[0].id
                for node in ast.walk(stmt.value):
                    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                        sides = (node.left, node.right)
                        for mine, other in (sides, sides[::-1]):
                            if isinstance(mine, ast.Name) and mine.id == target and _is_rescale(other, names):
                                kept = _rewrite(tree, node, lambda n, t=target: ast.Name(t, ast.Load()))
                                yield Mutant("missing-online-rescale", _site(node), ast.unparse(node), kept)


def _eps_side(node: ast.BinOp) -> tuple[ast.AST, ast.AST] | None:
    """(the rest, eps) of ``rest + eps`` or ``eps + rest``."""
    def is_eps(n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and "eps" in n.id.lower()
    if isinstance(node.op, ast.Add):
        if is_eps(node.right):
            return node.left, node.right
        if is_eps(node.left):
            return node.right, node.left
    return None


def eps_placement(tree: ast.Module) -> Iterator[Mutant]:
    """``sqrt(v + eps)`` becomes ``sqrt(v) + eps`` (``rsqrt`` likewise), and ``sqrt(v) + eps`` becomes
    ``sqrt(v + eps)``: the two conventions differ where the variance is small against eps."""
    for fn in _jit_functions(tree):
        for node in ast.walk(fn):
            if _attr(node) in ROOTS and len(node.args) == 1 and isinstance(node.args[0], ast.BinOp) \
                    and (parts := _eps_side(node.args[0])):
                rest, eps = parts
                func = node.func

                def outside(n: ast.AST, rest: ast.AST = rest, eps: ast.AST = eps,
                            func: ast.AST = func) -> ast.AST:
                    root = ast.Call(_sqrt_of(func), [rest], [])
                    moved = ast.BinOp(root, ast.Add(), eps)
                    if _attr(n) == "rsqrt":
                        return ast.BinOp(ast.Constant(1.0), ast.Div(), moved)
                    return moved
                yield Mutant("eps-placement", _site(node), ast.unparse(node), _rewrite(tree, node, outside))
            if isinstance(node, ast.BinOp) and (parts := _eps_side(node)) and _attr(parts[0]) in ROOTS \
                    and len(parts[0].args) == 1:
                root, eps = parts

                def inside(n: ast.AST, root: ast.Call = root, eps: ast.AST = eps) -> ast.AST:
                    return ast.Call(root.func, [ast.BinOp(root.args[0], ast.Add(), eps)], [])
                yield Mutant("eps-placement", _site(node), ast.unparse(node), _rewrite(tree, node, inside))


def _sqrt_of(func: ast.AST) -> ast.AST:
    func = copy.deepcopy(func)
    if isinstance(func, ast.Attribute):
        func.attr = "sqrt"
    elif isinstance(func, ast.Name):
        func.id = "sqrt"
    return func


def _mean_sub(node: ast.AST) -> ast.BinOp | None:
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and isinstance(n.right, ast.Name) \
                and ("mean" in n.right.id.lower() or n.right.id.lower() in ("mu", "avg")):
            return n
    return None


def one_pass_variance(tree: ast.Module) -> Iterator[Mutant]:
    """The variance around the mean becomes E[x^2] - mean^2: the squares of the centred values become the
    squares of the raw ones, and mean^2 is subtracted under the root; it cancels catastrophically when the
    mean is large against the spread."""
    for fn in _jit_functions(tree):
        centred: dict[str, ast.AST] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) and _mean_sub(node.value) is not None:
                centred[node.targets[0].id] = node.value
        roots = [n for n in ast.walk(fn) if _attr(n) in ROOTS and len(n.args) == 1
                 and isinstance(n.args[0], ast.BinOp) and _eps_side(n.args[0])]
        for node in ast.walk(fn):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
                    and ast.dump(node.left) == ast.dump(node.right)):
                continue
            side = node.left
            expr = centred.get(side.id) if isinstance(side, ast.Name) else side if _mean_sub(side) else None
            if expr is None or not roots:
                continue
            sub = _mean_sub(expr)
            mean = sub.right.id
            raw = _rewrite(ast.Module([ast.Expr(expr)], []), sub, lambda n: n.left)
            raw_expr = ast.parse(raw, mode="eval").body
            squared = _rewrite(tree, node, lambda n, r=raw_expr: ast.BinOp(r, ast.Mult(), copy.deepcopy(r)))
            mutated = ast.parse(squared)
            fixed = [n for n in ast.walk(mutated) if _attr(n) in ROOTS and len(n.args) == 1
                     and isinstance(n.args[0], ast.BinOp) and _eps_side(n.args[0])]
            for root in fixed:
                var, eps = _eps_side(root.args[0])
                minus = ast.BinOp(var, ast.Sub(), ast.BinOp(ast.Name(mean, ast.Load()), ast.Mult(),
                                                            ast.Name(mean, ast.Load())))
                root.args = [ast.BinOp(minus, ast.Add(), eps)]
            yield Mutant("one-pass-variance", _site(node), ast.unparse(node),
                         ast.unparse(ast.fix_missing_locations(mutated)))


def int32_offsets(tree: ast.Module) -> Iterator[Mutant]:
    """``.to(tl.int64)`` on an index is dropped: offsets wrap past 2^31 elements."""
    for fn in _jit_functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "to" and node.args and ast.unparse(node.args[0]).endswith("int64"):
                yield Mutant("int32-offsets", _site(node), ast.unparse(node),
                             _rewrite(tree, node, lambda n: n.func.value))


def dropped_tail_tile(tree: ast.Module) -> Iterator[Mutant]:
    """The last partial tile is never processed: ``cdiv(n, B)`` becomes ``n // B`` (a grid or a trip count),
    and ``range(0, n, B)`` stops at the last whole tile."""
    for node in ast.walk(tree):
        if _attr(node) == "cdiv" and len(node.args) == 2:
            yield Mutant("dropped-tail-tile", _site(node), ast.unparse(node),
                         _rewrite(tree, node, lambda n: ast.BinOp(n.args[0], ast.FloorDiv(), n.args[1])))
    for fn in _jit_functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("range", "tl.range") \
                    and len(node.args) == 3 and ast.unparse(node.args[0]) == "0":
                def whole(n: ast.Call) -> ast.AST:
                    stop, step = n.args[1], n.args[2]
                    whole_tiles = ast.BinOp(stop, ast.FloorDiv(), step)
                    n.args[1] = ast.BinOp(whole_tiles, ast.Mult(), copy.deepcopy(step))
                    return n
                yield Mutant("dropped-tail-tile", _site(node), ast.unparse(node), _rewrite(tree, node, whole))


def wrong_reduction_axis(tree: ast.Module) -> Iterator[Mutant]:
    """A reduction over axis 0 becomes one over axis 1 and back: rows summed where columns were meant."""
    for fn in _jit_functions(tree):
        for node in ast.walk(fn):
            if _attr(node) not in REDUCTIONS:
                continue
            for i, kw in enumerate(node.keywords):
                if kw.arg == "axis" and isinstance(kw.value, ast.Constant) and kw.value.value in (0, 1):
                    def swap(n: ast.Call, i: int = i) -> ast.AST:
                        n.keywords[i].value = ast.Constant(1 - n.keywords[i].value.value)
                        return n
                    swapped = _rewrite(tree, node, swap)
                    yield Mutant("wrong-reduction-axis", _site(node), ast.unparse(node), swapped)


OPERATORS: dict[str, Callable[[ast.Module], Iterator[Mutant]]] = {
    "mask-off-by-one": mask_off_by_one,
    "missing-online-rescale": missing_online_rescale,
    "eps-placement": eps_placement,
    "one-pass-variance": one_pass_variance,
    "int32-offsets": int32_offsets,
    "dropped-tail-tile": dropped_tail_tile,
    "wrong-reduction-axis": wrong_reduction_axis,
}
GPU_ONLY = {"int32-offsets"}
"""Operators whose mutants only fail past 2^31 elements: bench shapes, which run on a GPU only."""


def mutants(source: str, operators: list[str] | None = None) -> list[Mutant]:
    """Every mutant of ``source`` for the named operators (all by default), in a stable order."""
    tree = ast.parse(source)
    original = ast.unparse(tree)
    found: list[Mutant] = []
    for name in operators or list(OPERATORS):
        for mutant in OPERATORS[name](tree):
            if mutant.source != original and all(m.source != mutant.source for m in found):
                found.append(mutant)
    return found
