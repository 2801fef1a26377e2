"""Stage 1 for candidates that are module classes (an imported problem's ``ModelNew``).

The host-code rules are ``static.py``'s, with two differences: the entrypoint is a class whose
``forward`` takes the problem's inputs, and building layers in ``__init__`` (``nn.Linear(...)``,
``nn.Parameter(torch.randn(...))``) is plumbing, not computing the answer: the parameters are overwritten
with the reference's before any call, and the run-time policy watches that load and every forward. With
PyTorch calls allowed (``EvalOptions.allow_torch``) PyTorch compute ops are not flagged at all.
"""

from __future__ import annotations

import ast

from warpgym.env.judge.result import Violation
from warpgym.env.judge.static import StaticReport, check_source, names_load_inline

TORCH_CALL_CODES = frozenset({"torch-compute"})


def _init_lines(tree: ast.Module) -> set[int]:
    """Lines inside the ``__init__`` of any class of the module."""
    lines: set[int] = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                lines.update(range(fn.lineno, (fn.end_lineno or fn.lineno) + 1))
    return lines


def check_model_source(source: str, class_name: str, params: list[str], allow_torch: bool) -> StaticReport:
    report = check_source(source, class_name, params, "triton")
    if report.tree is None:
        return report
    tree = report.tree
    plumbing = _init_lines(tree)
    builds_extension = names_load_inline(source)  # its kernels are in the CUDA sources, not @triton.jit
    kept = [
        v
        for v in report.violations
        if v.code not in ("missing-entrypoint", "signature")
        and not (v.code == "no-kernel" and builds_extension)
        and not (v.code in TORCH_CALL_CODES and (allow_torch or (v.line or 0) in plumbing))
    ]
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        kept.append(
            Violation(
                "missing-entrypoint",
                f"the module defines no top-level class {class_name!r}; "
                f"define class {class_name}(nn.Module) with forward(self, {', '.join(params)})",
            )
        )
    else:
        forward = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
        if forward is None:
            kept.append(
                Violation("missing-entrypoint", f"{class_name} defines no forward method", cls.lineno)
            )
        else:
            got = [a.arg for a in forward.args.posonlyargs + forward.args.args][1:]
            if got[: len(params)] != params and forward.args.vararg is None:
                kept.append(
                    Violation(
                        "signature",
                        f"{class_name}.forward({', '.join(got)}) does not take the "
                        f"problem's inputs ({', '.join(params)})",
                        forward.lineno,
                    )
                )
    return StaticReport(not kept, kept, report.kernels, tree)
