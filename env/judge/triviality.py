"""The triviality audit of an imported suite: answers that compute nothing, checked against each task.

Zeros, ones, a constant, the first input passed through, and the reference output's mean as a constant
are compared with the reference at the dev sizes on the CPU, with the task's own tolerances and checks
(seeds, inputs). A task that one of them passes on any check is flagged (``tasks list`` / ``tasks show``)
and left out of experiments unless the file asks for it: an evaluation draws its inputs afresh, so an
answer that passes one check's draw passes some evaluations outright (on the H200, zeros were accepted by
both harnesses on a KernelBench problem whose output is ReLU(1.5 (xW + b - 2)): all zeros at its own sizes,
0.3% nonzero on one of three draws at the dev sizes). The answers are built in the judge: they run no
candidate code, so no worker is needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch
from warpgym.env.judge.cache import cache_dir, fingerprint
from warpgym.env.judge.compare import compare_outputs
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.plan import plan
from warpgym.env.judge.references import References
from warpgym.tasks import Sampler, Task

CONSTANT = 0.5
"""The constant answer: the mean of U(0, 1), which many problems draw their inputs from."""
AUDIT_VERSION = 3
MAX_ELEMENTS = 1 << 25
"""Past this many tensor elements at the dev sizes (a level-3 network whose layer widths are not size
constants: VGG16 holds 138M parameters) the audit is not run: its float64 references and answers would not
fit a laptop's memory. Such a task is reported as not audited, with the count."""

Answer = Callable[[list[Any], list[Any], dict[str, Any]], list[Any]]


def _like(
    meta: list[Any], value: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], expected: list[Any]
) -> list[Any]:
    return [value(m, e) if isinstance(m, torch.Tensor) else m for m, e in zip(meta, expected, strict=True)]


def _passed_through(meta: list[Any], inputs: dict[str, Any]) -> list[Any] | None:
    tensors = [v for v in inputs.values() if isinstance(v, torch.Tensor)]
    out = []
    for m in meta:
        if not isinstance(m, torch.Tensor):
            out.append(m)
            continue
        same = next((t for t in tensors if tuple(t.shape) == tuple(m.shape)), None)
        if same is None:
            return None
        out.append(same.to(m.dtype))
    return out


def _answers(meta: list[Any], expected: list[Any], inputs: dict[str, Any]) -> dict[str, list[Any] | None]:
    def full(v: float) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        return lambda m, e: torch.full(tuple(m.shape), v, dtype=m.dtype)

    return {
        "zeros": _like(meta, full(0.0), expected),
        "ones": _like(meta, full(1.0), expected),
        "constant": _like(meta, full(CONSTANT), expected),
        "input": _passed_through(meta, inputs),
        # a one-element output's mean is the answer itself: no constant is hidden in it
        "mean": None if any(isinstance(e, torch.Tensor) and e.numel() <= 1 for e in expected) else _like(
            meta,
            lambda m, e: torch.full(
                tuple(m.shape), float(e.double().mean()) if e.numel() else 0.0, dtype=m.dtype
            ),
            expected,
        ),
    }


def audit(task: Task) -> dict[str, Any]:
    """``{"trivial": [answers that pass some check], "passed": {answer: checks passed}, "checks": n}``;
    ``{"error": ...}`` when the task's reference cannot run at its dev sizes on the CPU, ``{"skipped": ...}``
    when they are too large for it."""
    count = task.model.elements(task.cases("dev")[0]) if task.model and task.model.elements else None
    if count is not None and count > MAX_ELEMENTS:
        return {"trivial": [], "skipped": f"its dev sizes hold {count} tensor elements, more than the "
                f"{MAX_ELEMENTS} the audit runs on the CPU"}
    refs = References("cpu")
    passed: dict[str, int] = {}
    checks = plan(task, EvalOptions(device="cpu", shape_sets=("dev",)), "cpu")
    try:
        for check in checks:
            expected, meta = refs.get(task, check.case, check.seed, check.distribution)
            inputs = task.make_inputs(check.case, Sampler(check.seed, check.distribution, "cpu"))
            for name, outputs in _answers(meta, expected, inputs).items():
                ok = outputs is not None and bool(compare_outputs(outputs, expected, meta, task)["passed"])
                passed[name] = passed.get(name, 0) + ok
    except Exception as exc:  # noqa: BLE001 - the user's problem failing at its dev sizes is reported
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}", "trivial": []}
    return {"trivial": sorted(n for n, k in passed.items() if k), "passed": passed, "checks": len(checks)}


def _key(task: Task) -> str:
    source = task.model.source if task.model is not None else task.id
    return fingerprint(AUDIT_VERSION, task.id, source, task.shapes["dev"], torch.__version__)


def _store() -> Any:
    return cache_dir() / "triviality.json"


def _read() -> dict[str, Any]:
    try:
        data = json.loads(_store().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached(task: Task) -> dict[str, Any] | None:
    """The audit recorded for this task's current source and sizes, or None."""
    return _read().get(_key(task))


def audited(tasks: list[Task], refresh: bool = False) -> dict[str, dict[str, Any]]:
    """The audit of each task by id: recorded ones read, the others run and recorded."""
    store = _read()
    out = {}
    for task in tasks:
        key = _key(task)
        if refresh or key not in store:
            store[key] = audit(task)
        out[task.id] = store[key]
    path = _store()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(store))
    tmp.replace(path)
    return out


def describe(result: dict[str, Any] | None) -> str:
    """One phrase for ``tasks list`` / ``tasks show``."""
    if result is None:
        return "not audited"
    if result.get("error"):
        return f"audit failed ({result['error']})"
    if result.get("skipped"):
        return f"not audited ({result['skipped']})"
    return f"TRIVIAL: passed by {passed_by(result)}" if result.get("trivial") else "not trivial"


def passed_by(result: dict[str, Any]) -> str:
    """The answers that pass a flagged task, each with how many checks it passed."""
    checks, passed = result.get("checks"), result.get("passed") or {}
    return ", ".join(f"{n} ({passed[n]} of {checks} checks)" if n in passed and checks else n
                     for n in result.get("trivial") or [])
