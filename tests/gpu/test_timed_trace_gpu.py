"""The traced sample of timed blocks on a real GPU: candidates honest in every checked call and not when
timed are rejected, honest ones pass with timing on and the sample's cost in the verdict, and a timed call
finds its fresh memory poisoned as a checked call does.

Run on the H200 machine: ``python -m pytest tests/gpu/test_timed_trace_gpu.py -m gpu -s``. Skipped
without CUDA (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, EvalResult, Evaluator
from warpgym.env.common.kernel_names import HARNESS_KERNELS, is_fill
from warpgym.env.judge.channel import ask, stage_inputs
from warpgym.env.judge.device_evidence import base_name
from warpgym.env.judge.timed_values import ALLOWED_MISMATCHES
from warpgym.env.protocol import messages as m
from warpgym.tasks import get_task

pytestmark = pytest.mark.gpu

CANDIDATES = Path(__file__).parent.parent / "adversarial" / "candidates"
TIMED = EvalOptions(device="cuda", shape_sets=("dev",), timing=True, warmup=3, reps=10)


@pytest.fixture(scope="module")
def gpu_evaluator() -> Iterator[Evaluator]:
    evaluator = Evaluator("cuda")
    yield evaluator
    evaluator.close()


def explain(result: EvalResult) -> str:
    return "\n".join(
        [f"stage={result.stage} correct={result.correct} speedup={result.speedup}"]
        + [f"{v.code}: {v.message}" for v in result.violations]
        + result.suspicious + result.skipped_checks
        + [f"device_activity={result.device_activity}"]
        + [c.message for c in result.cases if c.passed is False][:3]
    )


def judge(evaluator: Evaluator, task_id: str, source: str) -> EvalResult:
    return evaluator.evaluate(get_task(task_id), source, TIMED)


def test_an_answer_kept_for_timed_calls_is_rejected_by_the_traced_sample(gpu_evaluator):
    """No kernel and no PyTorch op in its timed calls: neither the run-time policy nor a checked call sees
    it; the traced timed blocks launched none of its kernels."""
    result = judge(gpu_evaluator, "math/add", (CANDIDATES / "timed_cached_answer.py").read_text())
    print("\n" + explain(result))
    assert result.correct is False, explain(result)
    assert "device-timed-no-kernel" in {v.code for v in result.violations}, explain(result)
    assert result.speedup is None and result.speedup_low is None, explain(result)


def test_pytorch_in_timed_calls_only_is_rejected(gpu_evaluator):
    result = judge(gpu_evaluator, "math/add", (CANDIDATES / "timed_torch_switch.py").read_text())
    print("\n" + explain(result))
    assert result.correct is False, explain(result)
    assert {"torch-op", "device-library-kernel"} & {v.code for v in result.violations}, explain(result)
    assert not result.speedup, explain(result)


@pytest.mark.parametrize(("task_id", "name"), [("math/add", "timed_kept_answer_token_kernel"),
                                              ("matmul/matmul", "timed_kept_answer_copied")])
def test_a_kept_answer_beside_a_launch_of_its_own_is_rejected_by_the_device_time_of_its_work(
        gpu_evaluator, task_id, name):
    """Every checked call right and every kernel rule kept: its timed calls take a fraction of the device
    time its own work took in the check after the window."""
    result = judge(gpu_evaluator, task_id, (CANDIDATES / f"{name}.py").read_text())
    print("\n" + explain(result))
    for t in result.timing or []:
        print(f"{task_id} {t.case}: timed {t.median_ms:.4f} ms, traced {t.traced_device_ms} ms, "
              f"checked {t.checked_device_ms} ms")
    assert result.correct is False, explain(result)
    assert "device-timed-less-work" in {v.code for v in result.violations}, explain(result)
    assert {"device-timed-no-kernel", "device-timed-unchecked-kernel"}.isdisjoint(
        v.code for v in result.violations), explain(result)
    assert result.speedup is None and result.speedup_low is None, explain(result)


@pytest.mark.parametrize("name", ["timed_short_tail", "timed_repaired_tail"])
def test_a_timed_call_that_skips_a_tail_of_its_work_is_caught_by_its_sampled_values(gpu_evaluator, name):
    """Three quarters of its work in every timed call, the tail left as the fresh output holds it (or
    finished by the next call for an output still held): within what the timed work rule lets through, but
    a timed call's answer read back is wrong."""
    result = judge(gpu_evaluator, "math/add", (CANDIDATES / f"{name}.py").read_text())
    print("\n" + explain(result))
    for t in result.timing or []:
        print(f"{t.case}: timed {t.median_ms:.4f} ms, traced {t.traced_device_ms} ms, checked "
              f"{t.checked_device_ms} ms, sampled {t.sampled_values}")
    assert result.correct is False, explain(result)
    assert "timed-wrong-answer" in {v.code for v in result.violations}, explain(result)
    assert result.speedup is None and result.speedup_low is None, explain(result)


HONEST = [
    ("math/add", None),
    ("normalization/softmax", None),
    ("math/add", CANDIDATES / "trust" / "honest_callable_object.py"),
]


@pytest.mark.parametrize(("task_id", "path"), HONEST, ids=["add", "softmax", "add-callable-object"])
def test_honest_triton_candidates_pass_timed_with_the_sample_in_the_verdict(gpu_evaluator, task_id, path):
    task = get_task(task_id)
    result = judge(gpu_evaluator, task_id, path.read_text() if path else task.solution_source())
    print("\n" + explain(result))
    assert result.correct is True and result.stage == "done" and not result.violations, explain(result)
    assert result.speedup and result.timing, explain(result)
    for t in result.timing:
        assert t.traced_blocks >= TIMED.paired.traced_blocks, explain(result)
        assert t.traced_calls == t.traced_blocks * t.block_calls and t.runs == t.rounds * t.block_calls
        print(f"{task_id} {t.case}: {t.runs} timed calls, {t.traced_calls} traced in {t.traced_blocks} "
              f"blocks, {t.trace_seconds:.3f} s of tracing; timed {t.median_ms:.4f} ms, its work on the "
              f"device {t.traced_device_ms} ms traced, {t.checked_device_ms} ms checked")
        assert t.traced_device_ms and t.checked_device_ms, explain(result)
        sampled = t.sampled_values or {}
        print(f"  sampled timed calls: {sampled}")
        assert sampled.get("calls", 0) >= 1 and sampled["elements"] >= 1024, sampled
        assert sampled["mismatches"] <= ALLOWED_MISMATCHES and not sampled["message"], sampled
    timed = result.device_activity["timed"]
    assert timed["traced_calls"] == sum(t.traced_calls for t in result.timing), timed
    own = {base_name(k.name) for k in result.kernels} | set(HARNESS_KERNELS)
    for name in timed["kernels"]:
        assert base_name(name) in own or is_fill(name), (name, timed)



def test_a_random_op_s_sampled_timed_values_match_its_checked_call_on_the_same_inputs(gpu_evaluator):
    """No reference answer exists for dropout; its timed values are read against its own checked call on
    the same timing inputs (one seed, one output), which must pass the task's check."""
    task = get_task("random/dropout")
    result = judge(gpu_evaluator, task.id, task.solution_source())
    print("\n" + explain(result))
    assert result.correct is True and not result.violations and result.timing, explain(result)
    for t in result.timing:
        sampled = t.sampled_values or {}
        print(f"{t.case}: sampled timed calls {sampled}")
        assert sampled.get("calls", 0) >= 1 and sampled["mismatches"] == 0 and not sampled["message"], sampled

PROBE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    print("fresh output all NaN:", bool(torch.isnan(out).all()), "offset:", x.storage_offset())
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''


def test_a_timed_call_finds_its_fresh_memory_poisoned_as_a_checked_call_does(gpu_evaluator):
    """A probe (its ``isnan`` is a PyTorch op the policy reports; only what it prints matters here): timed
    calls used to get the previous call's freed output, which holds an answer, where checked calls get NaN."""
    task = get_task("math/add")
    ev = gpu_evaluator.evaluation(task, PROBE, TIMED)
    assert ev.load(), ev.result.compile_errors
    case = task.cases("dev")[2]
    staged = stage_inputs(ev, case, [0, 1, 2], 120)
    assert staged.ok, staged.error
    ask(ev.workers.run, m.TimeBlockRequest(calls=1, warmup_calls=1), 120)
    ev.workers.run.log_tail(clear=True)
    reply = ask(ev.workers.run, m.TimeBlockRequest(calls=4, start=1, release=True), 120)
    assert reply.ok and len(reply.event_ms) == 4, reply
    lines = [line for line in ev.workers.run.log_tail(clear=True).splitlines() if line.startswith("fresh")]
    assert lines == ["fresh output all NaN: True offset: 1024"] * 4, lines
    gpu_evaluator.run_worker.stop()  # the probe ran PyTorch ops in it: not reused
