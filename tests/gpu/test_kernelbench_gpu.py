"""Imported KernelBench-format problems (the test fixtures) judged on a GPU with timing: with PyTorch
allowed, a ModelNew that calls library kernels keeps its verdict and speedup through the device evidence of
its checked and timed calls, and reports its own kernels' share of GPU time; strict refuses it; a ModelNew
that reuses its first answer is caught.

Run on the H200 machine: ``python -m pytest tests/gpu/test_kernelbench_gpu.py -m gpu -s``. Skipped without
CUDA (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, EvalResult, Evaluator
from warpgym.tasks.importers import import_suite

pytestmark = pytest.mark.gpu

FIXTURES = Path(__file__).parent.parent / "fixtures" / "kernelbench"


@pytest.fixture(scope="module")
def gpu_evaluator() -> Iterator[Evaluator]:
    with Evaluator("cuda") as evaluator:
        yield evaluator


@pytest.fixture(scope="module")
def scale_rows():  # noqa: ANN201
    return next(t for t in import_suite("kernelbench", FIXTURES).tasks if t.id.endswith("1_Scale_rows"))


def judge(evaluator: Evaluator, task, name: str, allow_torch: bool) -> EvalResult:  # noqa: ANN001
    options = EvalOptions(device="cuda", shape_sets=("dev", "bench"), allow_torch=allow_torch, warmup=3,
                          reps=10)
    return evaluator.evaluate(task, (FIXTURES / "candidates" / name).read_text(), options)


def test_library_kernels_are_allowed_with_pytorch_allowed_and_their_share_is_reported(gpu_evaluator,
                                                                                      scale_rows):
    result = judge(gpu_evaluator, scale_rows, "scale_rows_torch.py", allow_torch=True)
    print(result.feedback)
    assert result.correct is True and result.mode == "allow-torch" and not result.violations, result.feedback
    share = result.own_gpu_share
    assert result.speedup and share is not None and 0 < share < 1, result.feedback
    assert "timed" in (result.device_activity or {}), result.device_activity


def test_strict_refuses_the_same_model(gpu_evaluator, scale_rows):
    result = judge(gpu_evaluator, scale_rows, "scale_rows_torch.py", allow_torch=False)
    assert not result.correct and not result.speedup, result.feedback


@pytest.mark.parametrize("allow_torch", [True, False], ids=["allow-torch", "strict"])
def test_a_model_that_reuses_its_first_answer_is_caught_on_the_gpu(gpu_evaluator, scale_rows, allow_torch):
    result = judge(gpu_evaluator, scale_rows, "scale_rows_reuse.py", allow_torch=allow_torch)
    assert result.correct is False and not result.speedup, result.feedback
