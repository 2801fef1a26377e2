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


# ------------------------------------------------------------------ KernelBench's CUDA format (load_inline)
CUDA_OK = (FIXTURES / "candidates" / "scale_rows_cuda.py").read_text()
LAUNCH = ("    scale_rows_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), rows, "
          "cols);\n")
CUDA_VARIANTS = {
    # the wrapper computes with PyTorch's own ops (C++ calls reach the dispatcher as Python's do)
    "torch-in-cpp": CUDA_OK.replace(
        "    return out;\n}", "    return x * (2 * torch::arange(rows, x.options()) + 1).unsqueeze(1);\n}"),
    # the host computes: the input copied out, scaled in C++, copied back
    "host-compute": CUDA_OK.replace(LAUNCH, (
        "    auto h = x.to(torch::kCPU);\n    float* p = h.data_ptr<float>();\n"
        "    for (long i = 0; i < n; ++i) p[i] *= 2.0f * (i / cols) + 1.0f;\n"
        "    out.copy_(h);\n")),
    # pinned host memory a kernel could read and write behind the trace's back
    "host-mapped": CUDA_OK.replace("    auto out = torch::empty_like(x);\n",
                                   "    auto out = torch::empty_like(x);\n    float* h;\n"
                                   "    cudaMallocHost((void**)&h, 4);\n"),
    "off-by-one": CUDA_OK.replace("if (i < rows * cols)", "if (i < rows * cols - 1)"),
}


def judge_source(evaluator: Evaluator, task, source: str, allow_torch: bool = False) -> EvalResult:  # noqa: ANN001
    options = EvalOptions(device="cuda", shape_sets=("dev", "bench"), allow_torch=allow_torch, warmup=3,
                          reps=10)
    return evaluator.evaluate(task, source, options)


def test_a_cuda_extension_model_is_built_checked_and_timed(gpu_evaluator, scale_rows):
    result = judge_source(gpu_evaluator, scale_rows, CUDA_OK)
    print(result.feedback)
    assert result.correct is True and result.mode == "strict" and not result.violations, result.feedback
    assert any("scale_rows_kernel" in k.name for k in result.kernels), result.kernels
    assert result.speedup, result.feedback
    assert any("scale_rows_kernel" in name for name in (result.device_activity or {}).get("kernels", {}))


@pytest.mark.parametrize("variant", sorted(CUDA_VARIANTS))
def test_cuda_extensions_that_do_not_do_the_work_are_caught(gpu_evaluator, scale_rows, variant):
    result = judge_source(gpu_evaluator, scale_rows, CUDA_VARIANTS[variant])
    print(variant, [v.code for v in result.violations], result.compile_errors[:1])
    assert result.correct is not True and not result.speedup, result.feedback
    if variant == "host-mapped":
        assert "cudaMallocHost" in " ".join(result.compile_errors), result.compile_errors


def test_pytorch_in_the_cpp_wrapper_is_allowed_with_allow_torch(gpu_evaluator, scale_rows):
    result = judge_source(gpu_evaluator, scale_rows, CUDA_VARIANTS["torch-in-cpp"], allow_torch=True)
    assert result.correct is True and result.own_gpu_share is not None and result.own_gpu_share < 1, \
        result.feedback
