"""Which checks an evaluation runs: every (shape set, case, seed, distribution), and why the CPU cannot
run some of them (Triton's interpreter gets bf16 and fp8 wrong)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Any

import torch
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.static import parse
from warpgym.tasks import Sampler, Task
from warpgym.tasks.spec import sequence

INTERPRETER_FP8 = (
    "float8 outputs: Triton's interpreter rounds and saturates fp8 conversions wrongly (triton 3.9), so this "
    "case was not run on the CPU; run on a GPU to check it"
)
INTERPRETER_BF16 = (
    "bfloat16 inputs: Triton's interpreter computes bf16 wrongly (triton 3.9, silently) or not at all "
    "(3.6), so this case was not run on the CPU; run on a GPU to check it"
)
INTERPRETER_LIMITATION = "Triton interpreter limitation: "
"""How a case the interpreter could not run begins (``interpreter_limitation``)."""
NO_GPU_CUDA = (
    "CUDA/PTX kernels need a GPU: correctness was not checked on this device (the modules were compiled "
    "and analysed, and the first launch was checked, without running)"
)
# Bench cases are checked on one distribution: they are there to catch what only size shows (offsets
# past 2^31, grid limits). Outliers at 1e8 elements put a few fp16 attention outputs past any
# element-wise bound (a cancellation of two 100x values), which dev and heldout sizes check already.
BENCH_DISTRIBUTION = "uniform"


@dataclass(frozen=True)
class Check:
    """One call of the candidate to check: the inputs are rebuilt from these on both sides."""

    shape_set: str
    case: dict[str, Any]
    seed: int
    distribution: str
    fault: str | None = None
    """Why the CPU's interpreter cannot be trusted with it, or None."""
    purpose: str = "check"
    """Which draw of the role's inputs: ``check``, or ``timing`` for a timing window's input set."""

    def again(self, seed: int, distribution: str | None = None) -> Check:
        """The same case on other inputs (always runnable: the late and after-timing re-checks)."""
        return replace(self, seed=seed, distribution=distribution or self.distribution, fault=None)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """The case's identity across seeds."""
        return self.shape_set, tuple(sorted(self.case.items()))


def params(task: Task) -> list[str]:
    """The entrypoint's parameter names, from the task's signature (a model's: its forward's)."""
    if task.model is not None:
        return list(task.model.params)
    fn = parse(task.signature + ": ...").body[0]
    assert isinstance(fn, ast.FunctionDef)
    return [a.arg for a in fn.args.args]


def plan(task: Task, options: EvalOptions, device: str) -> list[Check]:
    checks = []
    for shape_set in options.shape_sets:
        for i, case in enumerate(task.cases(shape_set)):
            if shape_set == "bench":
                checks.append(Check(shape_set, case, task.seeds[0], BENCH_DISTRIBUTION))
                continue
            for r in range(max(len(task.seeds), len(task.distributions))):
                seed = task.seeds[r % len(task.seeds)]
                dist = task.distributions[(i + r) % len(task.distributions)]
                fault = interpreter_fault(task, case, seed, dist, device)
                checks.append(Check(shape_set, case, seed, dist, fault))
    return checks


def interpreter_limitation(what: str, target: str) -> str:
    """Why a case was not run on the CPU although its kernel compiled: the interpreter could not run it."""
    return (f"{INTERPRETER_LIMITATION}{what.strip()}; so this case was not run on the CPU (the kernel "
            f"compiled for {target}: on a GPU the compiled kernel decides)")


def runnable_here(task: Task, check: Check, device: str) -> bool:
    return not (device == "cpu" and (check.fault or task.language == "cuda"))


def _has_bf16(inputs: dict[str, Any]) -> bool:
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16 for v in inputs.values())


def interpreter_fault(task: Task, case: dict[str, Any], seed: int, dist: str, device: str) -> str | None:
    """Why Triton's interpreter cannot be trusted with this case on a CPU, or None.

    bf16 is wrong in the interpreter whether read or written; fp8 reads are exact but writes
    round and saturate wrongly (seen with Triton 3.6-3.9 on the CPU), so the outputs' dtypes matter too.
    """
    if device != "cpu" or task.language != "triton":
        return None
    try:
        inputs = task.make_inputs(case, Sampler(seed, dist, "meta"))
    except Exception:  # noqa: BLE001 - builders that compute on their tensors need real ones
        inputs = task.make_inputs(case, Sampler(seed, dist, "cpu"))
    if _has_bf16(inputs):
        return INTERPRETER_BF16
    try:
        outputs = sequence(task.reference_of(case)(**inputs))
    except Exception:  # noqa: BLE001 - no meta kernel: the output dtypes are found at run time
        return None
    dtypes = {o.dtype for o in outputs if isinstance(o, torch.Tensor)}
    if torch.bfloat16 in dtypes:
        return INTERPRETER_BF16.replace("bfloat16 inputs", "bfloat16 outputs")
    if dtypes & {torch.float8_e4m3fn, torch.float8_e5m2}:
        return INTERPRETER_FP8
    return None
