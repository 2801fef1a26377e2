"""The string a constant expression of the candidate's source makes, for the static scan (``static.py``).

A name the scan refuses is refused however it is spelled out of literals: ``"_" + "C"``,
``"".join(("_", "C"))``, ``f"{'_'}C"``, ``"%s%s" % ("_", "C")``, ``"{}{}".format("_", "C")``. Only forms whose
result is bounded by the source are evaluated (no width or precision in a format, no repetition), so that
reading a candidate never builds a huge string. A name computed at run time (``chr(95)``, a slice, a
value read from an input) is left to the run-time layers, as before.
"""

from __future__ import annotations

import ast
import re
import string

_PERCENT = re.compile(r"%(.)", re.DOTALL)
_FORMATTER = string.Formatter()


def literal_string(node: ast.AST | None) -> str | None:
    """The string ``node`` always evaluates to when it is built from string literals only, else None."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = literal_string(node.left)  # a sum of names is given up at its first one, not read to the end
        right = None if left is None else literal_string(node.right)
        return None if right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _percent(node)
    if isinstance(node, ast.JoinedStr):
        return _fstring(node)
    if isinstance(node, ast.Call):
        return _method_call(node)
    return None


def _parts(node: ast.AST) -> list[str] | None:
    """The strings of a list or tuple of literal strings (what ``"sep".join`` is given)."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    parts = [literal_string(e) for e in node.elts]
    return None if any(p is None for p in parts) else parts  # type: ignore[return-value]


def _method_call(node: ast.Call) -> str | None:
    """``"sep".join([...])``, ``"{}".format(...)`` and ``str.join("sep", [...])`` of literals."""
    func = node.func
    if not isinstance(func, ast.Attribute) or node.keywords:
        return None
    args = list(node.args)
    if isinstance(func.value, ast.Name) and func.value.id == "str":  # str.join(sep, parts)
        if not args:
            return None
        owner = literal_string(args.pop(0))
    else:
        owner = literal_string(func.value)
    if owner is None:
        return None
    if func.attr == "join" and len(args) == 1:
        parts = _parts(args[0])
        return None if parts is None else owner.join(parts)
    if func.attr == "format":
        values = [literal_string(a) for a in args]
        return None if any(v is None for v in values) else _format(owner, values)  # type: ignore[arg-type]
    return None


def _format(template: str, values: list[str]) -> str | None:
    """``template.format(*values)`` for plain ``{}``/``{0}`` fields only (no spec, conversion or lookup)."""
    out, auto = [], 0
    try:
        fields = list(_FORMATTER.parse(template))
    except ValueError:
        return None
    for text, name, spec, conversion in fields:
        out.append(text)
        if name is None:
            continue
        if spec or conversion not in (None, "s"):
            return None
        if name == "":
            index, auto = auto, auto + 1
        elif name.isdigit():
            index = int(name)
        else:
            return None
        if index >= len(values):
            return None
        out.append(values[index])
    return "".join(out)


def _percent(node: ast.BinOp) -> str | None:
    """``template % values`` for ``%s`` and ``%%`` only."""
    template = literal_string(node.left)
    if template is None:
        return None
    right = node.right
    values = _parts(right) if isinstance(right, ast.Tuple) else [literal_string(right)]
    if values is None or any(v is None for v in values):
        return None
    queue = list(values)

    def fill(match: re.Match[str]) -> str:
        if match.group(1) == "%":
            return "%"
        if match.group(1) != "s" or not queue:
            raise ValueError(match.group(0))
        return queue.pop(0)  # type: ignore[return-value]

    try:
        result = _PERCENT.sub(fill, template)
    except ValueError:
        return None
    return None if queue else result


def _fstring(node: ast.JoinedStr) -> str | None:
    """An f-string whose every field is itself a literal string, with no format spec."""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            out.append(part.value)
        elif isinstance(part, ast.FormattedValue) and part.format_spec is None \
                and part.conversion in (-1, ord("s")):
            value = literal_string(part.value)
            if value is None:
                return None
            out.append(value)
        else:
            return None
    return "".join(out)
