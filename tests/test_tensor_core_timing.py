"""The arch-verified mark needs the tensor cores shown at work in the timed calls, by their speed: a kernel
whose tensor-core path runs only under the profiler keeps its verdict but loses the mark. Rates are the
H200's (docs/benchmarks.md): the honest references run 413 to 1298 TFLOP/s."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from warpgym.env.common.device import KNOWN_CEILINGS
from warpgym.env.judge import feedback, tensor_core_timing
from warpgym.env.judge.options import EvalOptions
from warpgym.env.judge.result import EvalResult, Timing
from warpgym.env.protocol.violations import Violation
from warpgym.tasks import get_task

H200 = KNOWN_CEILINGS["H200"]
GEMM = get_task("ptx/gemm-bf16")
BENCH = GEMM.cases("bench")[0]


@pytest.fixture(autouse=True)
def on_an_h200(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensor_core_timing, "ceilings_for", lambda device: H200)


def ms_at(tflops: float, case: dict = BENCH, task=GEMM) -> float:
    return task.flops(case) / (tflops * 1e9)


def judged(median_tflops: float | None, traced_tflops: float | None = None, task=GEMM,
           **result: object) -> EvalResult:
    """A profiled, correct candidate whose bench case was timed at ``median_tflops`` (its kernels' device
    time in the traced timed blocks at ``traced_tflops``), judged after the timing."""
    case = task.cases("bench")[0]
    timing = None if median_tflops is None else [Timing(
        case=case, median_ms=ms_at(median_tflops, case, task), min_ms=0.0, max_ms=0.0, runs=30,
        tflops=median_tflops,  # as the bench phase sets it from the median
        traced_device_ms=None if traced_tflops is None else ms_at(traced_tflops, case, task))]
    res = EvalResult(task=task.id, target="sm_90a", device="cuda", correct=True, timing=timing,
                     required_features_met=True, arch_verified=True, **result)
    ev = SimpleNamespace(task=task, result=res, device="cuda", options=EvalOptions(device="cuda"))
    tensor_core_timing.judge(ev)
    return res


def test_cuda_cores_alone_reach_fp32_once_half_precision_twice_int8_four_times():
    assert H200.without_tensor_cores("float32") == 67.0
    assert H200.without_tensor_cores("bfloat16") == H200.without_tensor_cores("float8_e4m3fn") == 134.0
    assert H200.without_tensor_cores("int8") == 268.0


def test_an_honest_wgmma_gemm_keeps_the_mark_with_its_rate_in_the_verdict():
    result = judged(719.0, 760.0)
    assert result.arch_verified is True
    [evidence] = result.timed_tensor_cores
    assert evidence["shown"] and evidence["tflops"] == pytest.approx(719.0, abs=0.1)
    assert evidence["cuda_core_tflops"] == 134.0
    assert not tensor_core_timing.feedback_lines(result.timed_tensor_cores)


def test_a_kernel_whose_tensor_cores_run_only_under_the_profiler_loses_the_mark_not_its_verdict():
    """Its timed calls took the CUDA-core path: packed half FMAs at most, 134 TFLOP/s on an H200."""
    result = judged(118.0, 121.0)
    assert result.arch_verified is False
    assert result.required_features_met is True and result.correct is True  # reward and verdict stand
    [line] = tensor_core_timing.feedback_lines(result.timed_tensor_cores)
    assert "118.0 TFLOP/s" in line and "(134)" in line and "no arch-verified mark" in line


def test_a_product_with_fewer_multiplications_cannot_read_as_tensor_cores():
    """Three levels of Strassen's product on CUDA cores at their full rate read 134 / 0.67 = 200 TFLOP/s of
    the task's flops: under 1.5x the CUDA cores' ceiling (201)."""
    assert judged(200.0).arch_verified is False
    assert judged(202.0).arch_verified is True


def test_a_fast_traced_block_does_not_count_only_the_timed_median_does():
    """A candidate that tells the traced blocks apart could run less there (the timed work rule bounds the
    untraced calls below by the traced ones, not the other way): their device time shows nothing."""
    assert judged(150.0, 400.0).arch_verified is False
    assert judged(400.0, 150.0).arch_verified is True


def test_the_mark_stays_the_profile_s_alone_where_nothing_was_timed(monkeypatch):
    result = judged(None)
    assert result.arch_verified is True and result.timed_tensor_cores is None
    assert any("tensor cores in the timed calls: no bench case was timed" in s for s in result.skipped_checks)
    monkeypatch.setattr(tensor_core_timing, "ceilings_for", lambda device: None)
    result = judged(60.0)
    assert result.arch_verified is True
    assert any("ceilings are unknown" in s for s in result.skipped_checks)


def test_tasks_without_tensor_core_instructions_and_failing_verdicts_are_left_alone():
    matmul = get_task("matmul/matmul")  # Triton: no required instructions
    result = judged(1.0, task=matmul)
    assert result.timed_tensor_cores is None and not result.skipped_checks
    rejected = judged(60.0, violations=[Violation("device-timed-less-work", "x")])
    assert rejected.timed_tensor_cores is None and rejected.arch_verified is True


def test_the_feedback_says_why_the_mark_is_missing():
    result = judged(90.0)
    [line] = tensor_core_timing.feedback_lines(result.timed_tensor_cores)
    assert line in feedback.render(result, GEMM)
