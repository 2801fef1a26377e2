"""Two KernelBench-format suites whose one task has the same id and computes different things (x * 2 and
x * 3), and an executor whose verdict depends on which of them it is given: for the verdict caches' tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from warpgym.env import EvalOptions, EvalResult
from warpgym.tasks import Task
from warpgym.tasks.importers.model_problem import build_task

TASK_ID = "kernelbench/level1/1_Scale"
PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * {factor}


rows = 64
cols = 256


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""
DOUBLE = "class ModelNew: ...  # doubles x\n"


def _suite(root: Path, factor: str) -> Path:
    (root / "level1").mkdir(parents=True)
    (root / "level1" / "1_Scale.py").write_text(PROBLEM.format(factor=factor))
    return root


def twin_suites(root: Path) -> tuple[Path, Path]:
    """Two suites with the same task id: one doubles x, the other triples it."""
    return _suite(root / "kb_a", "2.0"), _suite(root / "kb_b", "3.0")


def imported(root: Path) -> Task:
    return build_task(TASK_ID, root / "level1" / "1_Scale.py", "kernelbench")


class ReferenceExecutor:
    """Judges every candidate as one that doubles x: correct exactly when the task's reference doubles."""

    kind = "cpu"
    slots = ["cpu"]

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, task: Any, candidate: Any, options: EvalOptions, /) -> EvalResult:
        self.calls += 1
        case = task.cases("dev")[0]
        x = torch.randn(4, 8)
        correct = bool(torch.equal(task.reference_of(case)(x=x), x * 2))
        return EvalResult(task=task.id, target=options.target, device="cpu", stage="done", compiled=True,
                          correct=correct)

    def close(self) -> None:
        pass
