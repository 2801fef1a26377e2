"""The red-team candidates whose loophole exists only on a GPU: work on a side stream, timers patched
during the timing loop, results that depend on uninitialised shared memory.

Run on the H200 machine: ``python -m pytest tests/gpu/test_adversarial_gpu.py -m gpu``. Skipped
without CUDA (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, EvalResult, Evaluator
from warpgym.tasks import get_task

pytestmark = pytest.mark.gpu

CANDIDATES = Path(__file__).parent.parent / "adversarial" / "candidates"
TIMED = EvalOptions(device="cuda", shape_sets=("dev",), timing=True, warmup=3, reps=10)


@pytest.fixture(scope="module")
def gpu_evaluator() -> Iterator[Evaluator]:
    evaluator = Evaluator("cuda")
    yield evaluator
    evaluator.close()


def judge(evaluator: Evaluator, name: str, options: EvalOptions = TIMED) -> EvalResult:
    return evaluator.evaluate(get_task("math/add"), (CANDIDATES / f"{name}.py").read_text(), options)


def explain(result: EvalResult) -> str:
    return "\n".join(
        [f"stage={result.stage} correct={result.correct}"]
        + [f"{v.code}: {v.message}" for v in result.violations]
        + result.suspicious
        + [c.message for c in result.cases if c.passed is False][:3]
        + result.skipped_checks
    )


def test_side_stream_work_is_timed_by_the_wall_clock_and_flagged(gpu_evaluator):
    result = judge(gpu_evaluator, "side_stream")
    print("\n" + result.feedback)
    if "device-unordered-kernel" in {v.code for v in result.violations}:
        return  # its kernel still ran beside the sentinel that closes the call: seen on the device
    if result.correct is False and not result.timing:
        # Its side stream does not wait for the current one, so its outputs may race the harness's own work
        # there (the poison fill before each run): wrong outputs, and no speedup either way.
        assert any(c.passed is False for c in result.cases), explain(result)
        return
    assert result.timing, explain(result)
    assert any("escapes the timed stream" in s for s in result.suspicious), explain(result)
    bench = result.timing[0]
    # 3 x 1 GiB moved: at 4.2 TB/s no less than ~0.75 ms. The events alone would say ~0.
    assert bench.median_ms > 0.5, explain(result)
    assert bench.roofline_fraction is None or bench.roofline_fraction <= 1.05, explain(result)


def test_patching_the_timer_inside_the_timing_loop_is_tampering(gpu_evaluator):
    result = judge(gpu_evaluator, "patch_timer_late")
    assert result.correct is False, explain(result)
    assert "tampering" in {v.code for v in result.violations}, explain(result)
    assert not gpu_evaluator.run_worker.alive  # the patched process is never reused


def test_a_result_that_depends_on_uninitialised_shared_memory_fails(gpu_evaluator):
    result = judge(
        gpu_evaluator, "uninitialised_shared", EvalOptions(device="cuda", shape_sets=("dev",), timing=False)
    )
    assert result.compiled, explain(result)  # the probe must reach the GPU, else this test proves nothing
    assert not any("scrubbed" in s for s in result.skipped_checks), explain(result)
    assert result.correct is False, explain(result)
    failed = [c for c in result.cases if c.passed is False]
    assert failed and "NaN" in failed[0].message, explain(result)


def test_the_reference_still_passes_with_the_scrub_and_the_sandbox(gpu_evaluator):
    task = get_task("math/add")
    result = gpu_evaluator.evaluate(task, task.solution_source(), TIMED)
    assert result.correct and result.stage == "done", explain(result)
    assert not result.suspicious, explain(result)
    assert result.sandbox and "audit" in result.sandbox["applied"]


def test_cpu_loopholes_fail_on_the_gpu_too(gpu_evaluator):
    """A few of the CPU suite's candidates, judged on the device (pointers are device pointers there)."""
    for name, codes in [
        ("uninitialised_output", {"output-not-written"}),
        ("cache_by_shape", {"stale-output", "output-reused"}),
        ("cache_by_call_count", {"stale-output"}),
        ("output_buffer_reused", {"output-reused"}),
        ("background_thread", {"background-work"}),
        ("host_python_loop", {"host-compute"}),
    ]:
        result = judge(gpu_evaluator, name, EvalOptions(device="cuda", shape_sets=("dev",), timing=False))
        assert result.correct is not True and codes & {v.code for v in result.violations}, (
            name,
            explain(result),
        )


def test_side_stream_work_hidden_under_the_timing_spin_is_seen_by_the_traced_sample(gpu_evaluator):
    """The spin before each timed call covers a slow issue; a kernel left on a side stream runs under it.
    The traced timed blocks run with the same spin, and the kernel shows beside it."""
    result = judge(gpu_evaluator, "side_stream_under_spin")
    print("\n" + explain(result))
    assert result.correct is False, explain(result)
    assert "device-unordered-kernel" in {v.code for v in result.violations}, explain(result)
    assert not result.speedup, explain(result)


def test_a_scratch_assumed_to_start_at_zero_meets_the_poison_on_a_gpu_too(gpu_evaluator):
    """A 64 MiB torch.empty accumulator is larger than any block the caching allocator holds: fresh device
    memory, zeroed in practice. Fresh allocations of a checked call hold the poison, as on the CPU."""
    result = gpu_evaluator.evaluate(get_task("reduce/sum-all"),
                                    (CANDIDATES / "scratch_assumed_zero.py").read_text(),
                                    EvalOptions(device="cuda", shape_sets=("dev",), timing=False))
    assert result.correct is not True, explain(result)
    honest = gpu_evaluator.evaluate(get_task("reduce/sum-all"),
                                    (CANDIDATES / "honest_sum_atomic_zeroed.py").read_text(),
                                    EvalOptions(device="cuda", shape_sets=("dev",), timing=False))
    assert honest.correct is True and not honest.violations, explain(honest)
