"""The evaluation core on a CPU: every stage, every bad input, and the five core tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, Evaluator, Limits
from warpgym.experiments.bench.eval_throughput import CORE_TASKS, WRONG_CANDIDATES
from warpgym.tasks import UnknownTaskError, get_task

DEV = EvalOptions(device="cpu", shape_sets=("dev",))
ADD = get_task("math/add")
ADD_SRC = ADD.solution_source()


def judge(evaluator: Evaluator, task_id: str, source: str, options: EvalOptions = DEV):
    return evaluator.evaluate(get_task(task_id), source, options)


def codes(result) -> set[str]:
    return {v.code for v in result.violations}


# ----------------------------------------------------------------------------- references and wrong kernels
# The same references and wrong candidates are the mix of ``warpgym bench``.
CORE = list(CORE_TASKS)
WRONG = WRONG_CANDIDATES


@pytest.mark.parametrize("task_id", CORE)
def test_reference_solution_passes_dev_and_heldout(cpu_evaluator, task_id):
    task = get_task(task_id)
    result = cpu_evaluator.evaluate(task, task.solution_source(),
                                    EvalOptions(device="cpu", shape_sets=("dev", "heldout")))
    assert result.compiled and result.correct, result.feedback
    assert result.stage == "done"
    assert all(c.passed for c in result.cases if c.skipped is None)
    assert any(c.shape_set == "heldout" for c in result.cases)
    # A CPU verdict never rests silently on the interpreter's bf16 or on missing timing.
    assert any("timing" in s for s in result.skipped_checks)
    if "bfloat16" in task.dtypes:
        assert any("bfloat16" in s for s in result.skipped_checks)
        assert any(c.skipped and c.passed is None for c in result.cases)


@pytest.mark.parametrize(("task_id", "label", "old", "new"),
                         [(t, *w) for t, ws in WRONG.items() for w in ws], ids=lambda v: str(v)[:30])
def test_plausible_wrong_candidates_fail(cpu_evaluator, task_id, label, old, new):
    source = get_task(task_id).solution_source()
    assert old in source, f"{label}: the reference changed; update the mutation"
    result = judge(cpu_evaluator, task_id, source.replace(old, new, 1),
                   EvalOptions(device="cpu", shape_sets=("dev", "heldout")))
    assert result.compiled, result.feedback
    assert result.correct is False, f"{label} was accepted"
    assert result.errors, "a failing shape set reports its errors"
    first = next(iter(result.errors.values()))
    assert first["failed_cases"] >= 1
    assert "First failing check" in result.feedback


# ----------------------------------------------------------------------------- static stage
def test_syntax_error_is_reported_with_line(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add", "import triton\ndef add(x, y)\n    return x\n")
    assert result.stage == "static" and not result.compiled
    assert codes(result) == {"syntax"}
    assert result.violations[0].line == 2


def test_missing_entrypoint(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add", ADD_SRC.replace("def add(", "def plus("))
    assert "missing-entrypoint" in codes(result)
    assert "add" in result.feedback


def test_wrong_signature(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add", ADD_SRC.replace("def add(x: torch.Tensor, y: torch.Tensor)",
                                                              "def add(a: torch.Tensor, b: torch.Tensor)"))
    assert "signature" in codes(result)


def test_pytorch_compute_in_host_code_is_rejected(cpu_evaluator):
    src = ADD_SRC.replace("    return out\n", "    return torch.add(x, y)\n")
    result = judge(cpu_evaluator, "math/add", src)
    assert "torch-compute" in codes(result)
    assert result.correct is not True


def test_pytorch_compute_hidden_from_the_scan_is_caught_at_run_time(cpu_evaluator):
    # A tensor method is invisible to the static scan; the ATen-op watcher sees it.
    src = ADD_SRC.replace("    return out\n", "    return x.add(y)\n")
    result = judge(cpu_evaluator, "math/add", src)
    assert "torch-op" in codes(result), result.feedback
    assert result.correct is False
    assert "add" in next(v.message for v in result.violations if v.code == "torch-op")


def test_no_triton_kernel(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add",
                   "import torch\n\ndef add(x, y):\n    return torch.empty_like(x)\n")
    assert "no-kernel" in codes(result)


def test_forbidden_import(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add", "import subprocess\n" + ADD_SRC)
    assert "forbidden-import" in codes(result)


# ----------------------------------------------------------------------------- compile stage
def test_kernel_that_does_not_compile_for_the_target(cpu_evaluator):
    # Runs in the interpreter (numpy broadcasting is lenient) but Triton's compiler rejects it.
    src = ADD_SRC.replace("tl.store(out_ptr + offsets, x + y, mask=mask)",
                          "tl.store(out_ptr + offsets, x + y, mask=mask)\n    tl.static_assert(BLOCK < 16)")
    result = judge(cpu_evaluator, "math/add", src)
    assert not result.compiled
    assert result.stage == "compile"
    assert result.compile_errors and "static_assert" in result.compile_errors[0].lower() or "assert" in \
        result.compile_errors[0].lower()
    assert "COMPILE FAILED" in result.feedback


def test_import_error_is_a_compile_failure(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add", "import no_such_module_xyz\n" + ADD_SRC)
    assert not result.compiled
    assert "no_such_module_xyz" in result.compile_errors[0]


# ----------------------------------------------------------------------------- correctness failures
def test_wrong_output_shape(cpu_evaluator):
    src = ADD_SRC.replace("    return out\n", "    return out[:-1]\n")
    result = judge(cpu_evaluator, "math/add", src)
    assert result.correct is False
    assert "shape" in result.cases[-1].message


def test_wrong_output_dtype(cpu_evaluator):
    src = ADD_SRC.replace("out = torch.empty_like(x)", "out = torch.empty_like(x, dtype=torch.float64)")
    result = judge(cpu_evaluator, "math/add", src)
    assert result.correct is False
    assert "dtype" in result.cases[-1].message


def test_exception_inside_a_kernel_launch(cpu_evaluator):
    # A launch that misses an argument fails inside Triton's launcher, not in the candidate's code.
    src = ADD_SRC.replace("(x, y, out, n, BLOCK=block", "(x, y, out, BLOCK=block")
    result = judge(cpu_evaluator, "math/add", src)
    assert result.correct is False
    assert result.runtime_error is not None and "n" in result.runtime_error
    assert "raised an error" in result.cases[-1].message


def test_exception_in_host_code_names_the_line(cpu_evaluator):
    src = ADD_SRC.replace("    n = x.numel()\n", "    n = x.numel()\n    raise ValueError('bad block')\n")
    result = judge(cpu_evaluator, "math/add", src)
    assert result.correct is False
    assert "bad block" in result.runtime_error and "candidate.py" in result.runtime_error


def test_infinite_loop_in_python_is_killed_and_harness_survives():
    src = ADD_SRC.replace("    n = x.numel()\n", "    n = x.numel()\n    while True:\n        pass\n")
    options = EvalOptions(device="cpu", limits=Limits(run=3))
    with Evaluator("cpu") as evaluator:
        result = evaluator.evaluate(ADD, src, options)
        assert result.correct is False
        assert "timed out" in result.cases[-1].message
        again = evaluator.evaluate(ADD, ADD_SRC, DEV)  # a fresh worker replaces the killed one
        assert again.correct


def test_infinite_loop_in_a_kernel_is_killed():
    src = ADD_SRC.replace("    x = tl.load(x_ptr + offsets, mask=mask)\n",
                          "    x = tl.load(x_ptr + offsets, mask=mask)\n    while n > 0:\n        x += 1\n")
    options = EvalOptions(device="cpu", limits=Limits(run=3))
    with Evaluator("cpu") as evaluator:
        result = evaluator.evaluate(ADD, src, options)
    assert result.correct is False
    assert result.cases and "timed out" in result.cases[-1].message


def test_worker_crash_is_contained(cpu_evaluator):
    src = ADD_SRC.replace("    n = x.numel()\n", "    n = x.numel()\n    import os, signal\n"
                          "    os.kill(os.getpid(), signal.SIGSEGV)\n")
    # dodge nothing: kill is caught
    src = src.replace("import os, signal", "import signal as s; import os as o")
    result = judge(cpu_evaluator, "math/add", src)
    # os.kill is a forbidden call; the static stage catches it before it can run.
    assert "forbidden-call" in codes(result)


def test_segfault_in_the_worker_is_a_verdict_not_a_crash(cpu_evaluator):
    src = ADD_SRC.replace("    n = x.numel()\n", "    n = x.numel()\n    import faulthandler\n"
                          "    faulthandler._sigsegv()\n")
    result = judge(cpu_evaluator, "math/add", src)
    assert result.correct is False
    assert "died" in result.cases[-1].message
    assert judge(cpu_evaluator, "math/add", ADD_SRC).correct  # replaced and healthy again


def test_worker_is_reused_while_healthy(cpu_evaluator):
    judge(cpu_evaluator, "math/add", ADD_SRC)
    pid = cpu_evaluator.run_worker.proc.pid
    judge(cpu_evaluator, "math/add", ADD_SRC)
    assert cpu_evaluator.run_worker.proc.pid == pid


def test_mutating_inputs_is_rejected(cpu_evaluator):
    src = ADD_SRC.replace("add_kernel[(triton.cdiv(n, block),)](x, y, out,",
                          "add_kernel[(triton.cdiv(n, block),)](x, y, x,")
    src = src.replace("    return out\n", "    return x\n")
    result = judge(cpu_evaluator, "math/add", src)
    assert "mutated-input" in codes(result)
    assert result.correct is False


# ----------------------------------------------------------------------------- isolation
def test_worker_has_no_secrets_and_a_private_directory(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok")
    probe = ADD_SRC.replace("    n = x.numel()\n", "    n = x.numel()\n    import os\n"
                            "    leaked = [k for k in os.environ if 'KEY' in k or 'TOKEN' in k]\n"
                            "    assert not leaked, leaked\n"
                            "    open('scratch.txt', 'w').write('x')\n"
                            "    assert os.path.exists(os.path.join(os.environ['TMPDIR'], 'scratch.txt'))\n")
    with Evaluator("cpu") as evaluator:
        result = evaluator.evaluate(ADD, probe, DEV)
        workdir = evaluator.run_worker.workdir
    assert result.correct, result.feedback
    assert workdir is not None and "warpgym-worker-" in str(workdir)
    assert not Path("scratch.txt").exists()


def test_worker_never_holds_reference_outputs(cpu_evaluator):
    # The worker receives a call's inputs and nothing else: no reference output travels to it.
    import torch
    from warpgym.env.judge import channel as evaluator_module

    sent = []
    original = cpu_evaluator.run_worker.request

    def spy(msg, timeout):
        sent.append(msg)
        return original(msg, timeout)

    cpu_evaluator.run_worker.request = spy
    task = get_task("normalization/softmax")
    try:
        assert judge(cpu_evaluator, "normalization/softmax", task.solution_source()).correct
    finally:
        cpu_evaluator.run_worker.request = original
    runs = [m for m in sent if m["op"] == "run"]
    assert runs and all(json.dumps({k: v for k, v in m.items() if k != "inputs"}) for m in sent)
    for m in runs:
        (x,) = m["inputs"].values()
        expected = task.reference(x)
        assert not torch.allclose(x.float(), expected.float(), atol=1e-3)
    assert evaluator_module  # the module that sends every request


# ----------------------------------------------------------------------------- instructions
@pytest.mark.parametrize(("target", "family", "sass_opcode_family"), [("sm_90a", "wgmma", "wgmma"),
                                                                     ("sm_100a", "tcgen05", "tcgen05")])
def test_matmul_reference_uses_the_architectures_tensor_cores(cpu_evaluator, target, family,
                                                              sass_opcode_family):
    task = get_task("matmul/matmul")
    result = cpu_evaluator.evaluate(task, task.solution_source(), EvalOptions(device="cpu", target=target))
    assert result.correct, result.feedback
    counts = result.instructions[family]
    assert counts["ptx"] > 0 and counts["sass"] > 0, result.instructions
    assert counts["executed"] is None  # no GPU here: executed counts are not claimed
    other = "tcgen05" if family == "wgmma" else "wgmma"
    assert result.instructions[other]["sass"] == 0
    assert all(k.target == target for k in result.kernels)


def test_elementwise_kernel_has_no_tensor_core_instructions(cpu_evaluator):
    result = judge(cpu_evaluator, "math/add", ADD_SRC)
    assert result.instructions["wgmma"] == {"ptx": 0, "sass": 0, "executed": None}
    assert result.kernels and result.kernels[0].name == "add_kernel"


# ----------------------------------------------------------------------------- the command line
def warpgym(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warpgym.experiments.cli", *args], capture_output=True,
                          text=True, input=stdin, timeout=600, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_cli_eval_json_has_the_documented_fields(tmp_path):
    proc = warpgym("eval", "math/add", str(ADD.solution_path), "--device", "cpu", "--json",
                     "--shapes", "dev")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("task", "stage", "compiled", "correct", "violations", "errors", "instructions",
                "required_features_met", "timing", "speedup", "feedback"):
        assert key in out
    assert out["correct"] is True and out["timing"] is None and out["speedup"] is None
    assert set(out["instructions"]["wgmma"]) == {"ptx", "sass", "executed"}


def test_cli_eval_exits_1_when_the_candidate_is_not_accepted(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(ADD_SRC.replace("x + y, mask=mask", "x * y, mask=mask"))
    proc = warpgym("eval", "math/add", str(bad), "--device", "cpu", "--json", "--shapes", "dev")
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["correct"] is False and out["errors"]["dev"]["mismatches"] > 0
    bad.write_text("def add(x, y):\n    return x +\n")
    rejected = warpgym("eval", "math/add", str(bad), "--device", "cpu")
    assert rejected.returncode == 1 and "REJECTED" in rejected.stdout
    help_text = " ".join(warpgym("eval", "--help").stdout.split())
    assert "exit status: 0 when the candidate is accepted" in help_text


def test_eval_accepts_only_a_clean_correct_verdict():
    from warpgym.env import EvalResult, Violation
    from warpgym.experiments.cli.eval_cmd import accepted

    def verdict(**fields):
        return EvalResult(task="math/add", target="sm_90a", device="cpu", compiled=True, **fields)

    assert accepted(verdict(correct=True))
    assert not accepted(verdict(correct=False))
    assert not accepted(verdict(correct=None))  # not checked on this device
    assert not accepted(verdict(correct=True, required_features_met=False))
    assert not accepted(verdict(correct=True, violations=[Violation("torch-compute", "x")]))


@pytest.mark.parametrize(("args", "needle"), [
    (("eval", "math/nope", "x.py"), "unknown task id 'math/nope'"),
    (("eval", "math/add", "/no/such/file.py"), "no such file"),
    (("eval", "math/add", "-", "--device", "cuda:0"), "no CUDA GPU"),
    (("tasks", "show", "softmax"), "unknown task id"),
])
def test_cli_usage_errors_exit_2_with_a_clear_message(args, needle):
    proc = warpgym(*args, stdin=ADD_SRC)
    assert proc.returncode == 2
    assert needle in proc.stderr


def test_cli_tasks_list_and_show():
    listing = warpgym("tasks", "list")
    assert listing.returncode == 0
    for task_id in CORE:
        assert task_id in listing.stdout
    shown = warpgym("tasks", "show", "normalization/softmax")
    assert "def softmax(x: torch.Tensor) -> torch.Tensor" in shown.stdout
    assert "m=4, n=100" in shown.stdout
    assert "heldout" not in shown.stdout.lower() or "unseen" in shown.stdout


def test_unknown_task_id_in_the_api():
    import warpgym

    with pytest.raises(UnknownTaskError, match="did you mean"):
        warpgym.make("normalization/sofmax")


def test_an_error_outside_the_checks_reaches_the_feedback():
    """A failure in timing (or in the harness) has no failing check to carry it: the feedback says it."""
    from warpgym.env.judge import feedback
    from warpgym.env.judge.result import EvalResult

    task = get_task("math/add")
    result = EvalResult(task=task.id, target="sm_90a", device="H200", stage="timing", compiled=True,
                        correct=False)
    result.runtime_error = "timing: CUDA out of memory"
    assert "timing: CUDA out of memory" in feedback.render(result, task)


def _crash_runs(worker, times: int) -> list[int]:
    """Make the worker's next ``times`` runs die as a corrupted heap would (killed mid-request)."""
    from warpgym.env.judge.pool import WorkerError

    real, crashed = worker.request, []

    def request(msg, timeout):
        if msg["op"] == "run" and len(crashed) < times:
            crashed.append(worker.proc.pid)
            worker.kill()
            raise WorkerError("crash", "the worker process died (killed by signal 6 (SIGABRT))")
        return real(msg, timeout)

    worker.request = request
    return crashed


def test_a_crash_in_a_worker_kept_from_earlier_evaluations_runs_again_in_a_new_one():
    """An earlier candidate may have damaged the kept worker where no guard saw it: the next candidate is
    not blamed for the crash; a crash in its own fresh worker still is."""
    task = get_task("math/add")
    options = EvalOptions(shape_sets=("dev",))
    with Evaluator("cpu") as evaluator:
        assert evaluator.evaluate(task, task.solution_source(), options).correct  # the worker is now kept
        crashed = _crash_runs(evaluator.run_worker, times=1)
        result = evaluator.evaluate(task, task.solution_source(), options)
        assert result.correct, result.feedback
        assert len(crashed) == 1 and evaluator.run_worker.proc.pid != crashed[0]
        del evaluator.run_worker.request
        crashed = _crash_runs(evaluator.run_worker, times=2)
        result = evaluator.evaluate(task, task.solution_source(), options)
        assert result.correct is False and len(crashed) == 2 and "died" in result.feedback


def test_launches_made_unrecorded_are_neither_counted_nor_kept():
    from warpgym.env.worker.triton_launches import LaunchRecorder

    recorder = LaunchRecorder()
    recorder.record(print, (1,), {})
    with recorder.unrecorded():
        for _ in range(300):  # the timing loop's launches: none may hold its arguments alive
            recorder.record(print, (2,), {})
    assert recorder.count == 1 and len(recorder.launches) == 1 and recorder.keep


def test_each_torch_compile_baseline_gets_its_own_dynamo_cache():
    """Tasks declared in a loop share one reference lambda; past Dynamo's recompile limit (8) a shared
    code object would run eager code under the name torch.compile."""
    import torch
    from torch._dynamo.utils import counters
    from warpgym.env.judge.baselines import own_code as _own_code

    def shared(x):
        return torch.nn.functional.gelu(x) * 2

    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
    counters.clear()
    for i in range(12):
        compiled = torch.compile(_own_code(shared), backend="eager", dynamic=False)
        x = torch.randn(3 + i, 5, dtype=dtypes[i % 4])
        assert torch.equal(compiled(x), shared(x))
    assert counters["stats"]["unique_graphs"] == 12


def test_a_case_that_failed_after_timing_is_run_again_cold_to_tell_cheating_from_a_wrong_answer():
    # The bench case is checked only after the timing loop; a kernel wrong there from its first call
    # (the "subtracts" candidate stands in for one) is a wrong answer, not the "inconsistent" violation.
    from warpgym.env.judge import bench
    from warpgym.env.judge.plan import Check

    case = ADD.cases("dev")[0]
    item = Check("dev", case, 7, "uniform")
    wrong = ADD_SRC.replace("x + y, mask=mask", "x - y, mask=mask", 1)
    assert wrong != ADD_SRC
    with Evaluator("cpu") as evaluator:
        for source, right in ((ADD_SRC, True), (wrong, False)):
            result = evaluator.evaluate(ADD, source, DEV)
            assert result.correct is right
            first_worker = evaluator.run_worker.proc.pid
            evaluation = evaluator.evaluation(ADD, source, DEV)
            evaluation.result = result
            assert bench.right_when_cold(evaluation, item) is right
            assert evaluator.run_worker.proc.pid != first_worker, "the case ran again in a new worker"
