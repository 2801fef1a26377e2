"""Triton's interpreter runs kernels as they run compiled (env/worker/interpreter_compat.py); what it still
cannot run is never a wrong kernel on the CPU, and never a passed one either; a dead worker says how and
where it died."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, RewardConfig
from warpgym.env.judge import crash
from warpgym.tasks import get_task

DEV = EvalOptions(device="cpu", shape_sets=("dev",))
SCENARIOS = Path(__file__).with_name("interpreter_scenarios.py")
CANDIDATES = Path(__file__).parent / "adversarial" / "candidates"


def candidate_source(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


def explain(result) -> str:
    return f"correct={result.correct} stage={result.stage}\n{result.feedback}"


@pytest.fixture(scope="module")
def scenarios() -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(SCENARIOS)], env=env, capture_output=True, text=True,
                          timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("REPORT ")), None)
    assert line, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(line[len("REPORT "):])


def test_a_float_scalar_arrives_as_the_fp32_the_compiled_launch_passes(scenarios):
    stored, product = scenarios["scalar"]
    assert stored == pytest.approx(0.10000000149011612, abs=0) and stored != 0.1
    assert product == pytest.approx(3 * 0.10000000149011612, rel=1e-7)  # fp16 * fp32 computed in fp32


def test_libdevice_functions_compute_and_unmapped_ones_are_a_named_limitation(scenarios):
    assert scenarios["libdevice_error"] < 1e-6
    assert scenarios["unmapped"] == "libdevice.j0 (__nv_j0f) has no equivalent in Triton's interpreter"


def test_and_or_on_block_masks_combine_element_wise(scenarios):
    # 3 rows x 5 columns may be written: Python's `and` kept only `cols < n` (8 rows x 5 = 40 writes).
    assert scenarios["and_written"] == [15, 15]
    assert scenarios["or_written"] == [15, 15]
    assert scenarios["constexpr_and"] == [1.0, 2.0]  # constexpr operands still short-circuit


def test_float32_dots_read_their_operands_as_tensor_cores_do(scenarios):
    exact = 1 + 3 * 2.0**-12
    # TF32 (the default): the low 13 mantissa bits dropped, not rounded (that would give 1 + 2**-10)
    assert scenarios["dot"]["default"] == scenarios["dot"]["tf32"] == 1.0
    # three TF32 products recover it exactly, as IEEE products do
    assert scenarios["dot"]["tf32x3"] == scenarios["dot"]["ieee"] == exact


def test_autotune_runs_every_configuration_in_turn(scenarios):
    assert scenarios["autotune"] == [32, 64, 128, 32]
    assert "3 configurations" in scenarios["autotune_notes"][0]


def test_only_errors_the_interpreter_raised_inside_a_kernel_are_limitations(scenarios):
    assert scenarios["attribute_error"].startswith("AttributeError: ")
    assert scenarios["device_assert"] is None  # a failed assertion fails on a GPU too
    assert scenarios["host_raised"] is None  # the candidate's own InterpreterError is its own error
    assert scenarios["plain_error"] is None


def judge(evaluator, task_id: str, name: str):
    return evaluator.evaluate(get_task(task_id), candidate_source(name), DEV)


def test_provoking_an_interpreter_gap_on_the_hard_cases_earns_nothing(cpu_evaluator):
    """Right on the probe, wrong elsewhere behind a libdevice call the interpreter lacks: not checked on
    the CPU (never INCORRECT for a gap), and never correct either; its compilation is still checked."""
    result = judge(cpu_evaluator, "math/add", "interpreter_gap_dodge")
    assert result.correct is None and RewardConfig()(result) == 0.0, explain(result)
    assert result.feedback.startswith("Verdict: NOT CHECKED on the CPU (Triton interpreter limitation"), \
        result.feedback
    assert "libdevice.j0" in result.feedback and "on a GPU the compiled kernel decides" in result.feedback
    assert result.compiled and not result.compile_errors and result.stage == "instructions"
    assert "INCORRECT" not in result.feedback and "AttributeError" not in result.feedback


def test_a_gap_does_not_hide_a_case_that_ran_and_failed(cpu_evaluator):
    source = candidate_source("interpreter_gap_dodge").replace("out = x + y", "out = x * y")
    assert "x * y" in source
    result = cpu_evaluator.evaluate(get_task("math/add"), source, DEV)
    assert result.correct is False and result.feedback.startswith("Verdict: INCORRECT"), explain(result)


def test_a_kernel_using_every_workaround_passes(cpu_evaluator):
    result = judge(cpu_evaluator, "normalization/softmax", "interpreter_gap_honest")
    assert result.correct is True, explain(result)
    assert any("autotune" in note for note in result.notes) and "Note: @triton.autotune" in result.feedback


def test_a_float32_dot_at_its_default_tf32_precision_fails_a_task_that_needs_float32_products(cpu_evaluator):
    result = judge(cpu_evaluator, "matmul/matmul-fp32", "dot_tf32_default")
    assert result.correct is False, explain(result)
    assert any(c.passed is False and "outside" in c.message for c in result.cases), explain(result)
    assert any("TF32 precision" in note for note in result.notes), result.notes


def test_three_tf32_products_give_float32_accuracy_and_pass(cpu_evaluator):
    result = judge(cpu_evaluator, "matmul/matmul-fp32", "honest_matmul_tf32x3")
    assert result.correct is True and not result.violations, explain(result)


# ----------------------------------------------------------------------------- crashes
SEGFAULT_STORE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    total = tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets - (1 << 40), total, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    print("about to launch")
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''


def test_a_store_outside_every_tensor_is_a_wrong_kernel_with_the_store_named(cpu_evaluator):
    """The interpreter's bounds check stops the store that would have crashed the worker (a segfault
    before it), and the verdict names it."""
    result = cpu_evaluator.evaluate(get_task("math/add"), SEGFAULT_STORE, DEV)
    assert result.correct is False, explain(result)
    message = next(c.message for c in result.cases if c.passed is False)
    assert "out-of-bounds store" in message and "add_kernel" in result.feedback, message
    assert "/tmp/" not in result.feedback and "site-packages" not in result.feedback, result.feedback


def test_a_segfault_names_the_signal_and_the_line(cpu_evaluator):
    source = get_task("math/add").solution_source().replace(
        "    out = torch.empty_like(x)\n", "    out = torch.empty_like(x)\n    faulthandler._sigsegv()\n", 1)
    assert "_sigsegv()" in source
    result = cpu_evaluator.evaluate(get_task("math/add"), "import faulthandler\n" + source, DEV)
    assert result.correct is False, explain(result)
    text = result.feedback
    assert "killed by signal 11 (SIGSEGV" in text, text
    assert "candidate.py" in text and "/tmp/" not in text and "site-packages" not in text, text
    assert text.count("Fatal Python error") == 1, text  # not again as output


def test_an_abort_in_host_code_is_named(cpu_evaluator):
    source = get_task("math/add").solution_source().replace(
        "    out = torch.empty_like(x)\n", "    out = torch.empty_like(x)\n    os.abort()\n", 1)
    assert "os.abort()" in source
    result = cpu_evaluator.evaluate(get_task("math/add"), "import os\n" + source, DEV)
    assert result.correct is False, explain(result)
    text = result.feedback
    assert "SIGABRT" in text and "aborted itself" in text, text
    assert "candidate.py" in text, text


def test_crash_description_without_a_stack_or_output():
    assert crash.describe(-9, "") == (
        "the worker process died (killed by signal 9 (SIGKILL: killed from outside (most often its memory "
        "limit))); it wrote nothing before dying")
    assert crash.describe(3, "x" * 1000).startswith("the worker process died (exit 3); the last lines")
    assert len(crash.describe(3, ("x" * 1000 + "\n") * 50)) < 4000


READS_PAST_THE_END = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    stray = tl.load(x_ptr + offsets, mask=offsets <= n, other=0.0)
    total = stray + tl.load(y_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, total, mask=offsets < n)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''


def test_a_load_one_past_an_input_is_out_of_bounds_though_the_lane_is_never_stored(cpu_evaluator):
    """The input sits inside the worker's NaN guard, so the stray lane reads NaN that no store keeps: the
    result is right, the access is not (past the end of a real allocation it faults on a GPU)."""
    result = cpu_evaluator.evaluate(get_task("math/add"), READS_PAST_THE_END, DEV)
    assert result.correct is False, explain(result)
    message = next(c.message for c in result.cases if c.passed is False)
    assert "out-of-bounds load" in message, message
    honest = READS_PAST_THE_END.replace("offsets <= n", "offsets < n")
    assert cpu_evaluator.evaluate(get_task("math/add"), honest, DEV).correct is True
