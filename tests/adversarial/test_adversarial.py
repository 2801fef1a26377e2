"""The red-team suite: every known way to fool a kernel benchmark, tried in earnest, must fail here with
a specific reason (DESIGN.md, "Evaluation you can trust").

Each candidate in ``candidates/`` is written to pass a naive harness. Several dodge the static scan on
purpose, so that the run-time layer (the ATen-op watcher, the audit layer of the sandbox, the checks
on replies) is what rejects them; ``layer`` says which one must.
"""

from __future__ import annotations

import pytest
from warpgym.env import EvalOptions
from warpgym.env.judge.pool import Worker

from .conftest import explain

# candidate, task, violation codes (one must be found), layer that must catch it, words the message must say
LOOPHOLES = [
    ("uninitialised_output", "math/add", {"output-not-written"}, "run", "never given"),
    ("mutate_inputs", "normalization/softmax", {"mutated-input"}, "run", "modified its inputs"),
    ("background_thread", "math/add", {"background-work"}, "run", "still running"),
    ("child_process", "math/add", {"sandbox-process"}, "run", "forking"),
    ("fork_bomb", "math/add", {"sandbox-process"}, "run", "forking"),
    ("lazy_subclass", "math/add", {"output-type"}, "run", "plain torch.Tensor"),
    ("patch_timer", "math/add", {"tampering"}, "run", "elapsed_time"),
    ("patch_statistics", "math/add", {"tampering"}, "run", "statistics.median"),
    ("method_call", "normalization/softmax", {"torch-op"}, "run", "softmax"),
    ("getattr_torch", "normalization/softmax", {"obfuscated-access"}, "static", "getattr"),
    ("importlib_op", "normalization/softmax", {"forbidden-import"}, "static", "importlib"),
    ("string_eval", "normalization/softmax", {"dynamic-code"}, "run", "run time"),
    ("matmul_dunder", "matmul/matmul", {"torch-op"}, "run", "mm"),
    ("host_numpy", "normalization/softmax", {"host-compute"}, "run", "numpy()"),
    ("host_python_loop", "math/add", {"host-compute"}, "run", "tolist()"),
    (
        "low_precision_host",
        "normalization/softmax",
        {"torch-op"},
        "run",
        "cast torch.float32 -> torch.float16",
    ),
    ("cache_by_shape", "math/add", {"stale-output", "output-reused"}, "run", "cached"),
    ("cache_by_call_count", "math/add", {"stale-output"}, "run", "cached"),
    ("output_buffer_reused", "math/add", {"output-reused"}, "run", "return a new tensor"),
    ("sleeper", "math/add", {"inconsistent"}, "run", "later"),
    ("gc_walk", "math/add", {"introspection"}, "static", "__subclasses__"),
    ("gc_walk_hidden", "math/add", {"introspection"}, "run", "gc.get_objects"),
    ("read_harness_memory", "math/add", {"sandbox-filesystem"}, "run", "another process's entry"),
    ("forge_reply", "math/add", {"forged-reply"}, "run", "channel"),
    ("forge_huge_frame", "math/add", {"forged-reply"}, "run", "past the protocol's"),
    ("forge_launch_names", "math/add", {"forbidden-call"}, "static", "sys.modules"),
    ("open_socket", "math/add", {"sandbox-network"}, "run", "network access"),
    ("out_of_bounds_write", "math/add", {"out-of-bounds"}, "run", "past the end"),
]


@pytest.mark.parametrize(
    ("name", "task_id", "expected", "layer", "words"), LOOPHOLES, ids=[row[0] for row in LOOPHOLES]
)
def test_loophole_is_rejected_with_a_reason(judge, name, task_id, expected, layer, words):
    result = judge(task_id, name)
    assert result.correct is not True, explain(result)
    hit = [v for v in result.violations if v.code in expected]
    assert hit, f"expected one of {expected}:\n{explain(result)}"
    messages = [v.message for v in hit]
    assert any(words in m and len(m) > 40 for m in messages), messages  # a sentence a person can act on
    if layer == "static":
        assert result.stage == "static" and not result.compiled, explain(result)
    else:
        assert result.stage != "static", f"{name} must get past the scan, to test the run-time layer"
    assert hit[0].message[:40] in result.feedback, result.feedback  # the model is told, too


def test_the_harness_goes_on_after_each_attack(cpu_evaluator, judge):
    """Evaluating the reference right after a run of attacks gives a clean verdict (no leftovers)."""
    for name in ("forge_reply", "background_thread", "fill_disk"):
        judge("math/add", name)
    from warpgym.tasks import get_task

    task = get_task("math/add")
    result = cpu_evaluator.evaluate(
        task, task.solution_source(), EvalOptions(device="cpu", shape_sets=("dev",))
    )
    assert result.correct and not result.violations, explain(result)


def test_low_precision_arithmetic_fails_float32_cases_and_says_why(judge):
    result = judge("normalization/softmax", "low_precision_kernel")
    assert result.correct is False, explain(result)
    failed = [c for c in result.cases if c.passed is False]
    assert failed and failed[0].case["dtype"] == "float32", explain(result)
    assert "float16 or bfloat16 arithmetic" in failed[0].message, failed[0].message
    assert "relative" in failed[0].message or "outside" in failed[0].message


def test_a_constant_that_passes_an_absolute_tolerance_fails_the_normwise_bound(cpu_evaluator, judge):
    """A lenient absolute tolerance (as a task author might give an fp16 task) with answers near zero:
    zeros pass every element, and only the norm-wise relative bound stops them."""
    import dataclasses

    from warpgym.tasks import get_task
    from warpgym.tasks.spec import Tolerance

    base = get_task("math/add")
    lenient = dataclasses.replace(
        base,
        distributions=("small",),
        tolerances={"float32": Tolerance(1e-2, 1e-4, 1e-5, "lenient on purpose")},
    )
    from .conftest import candidate_source

    result = cpu_evaluator.evaluate(lenient, candidate_source("constant_output"), EvalOptions(device="cpu"))
    assert result.correct is False, explain(result)
    first = next(c for c in result.cases if c.passed is False)
    assert first.mismatches == 0, "every element is within atol: the element-wise check alone would pass it"
    assert "relative L2 error" in first.message and "as a whole" in first.message, first.message


def test_caching_by_pointer_never_passes(judge):
    """Whether or not the allocator reuses addresses, a pointer cache cannot pass: either a reused
    address replays a stale answer (caught as such), or nothing is cached and it is an honest kernel."""
    result = judge("math/add", "cache_by_pointer")
    if result.correct:
        assert not result.violations  # no address was reused: it computed every answer
    else:
        assert "stale-output" in {v.code for v in result.violations} or any(
            c.passed is False for c in result.cases
        ), explain(result)


def test_undefined_behaviour_out_of_bounds_never_passes_and_the_harness_survives(cpu_evaluator, judge):
    result = judge("normalization/softmax", "out_of_bounds")
    assert result.correct is not True, explain(result)
    from warpgym.tasks import get_task

    task = get_task("normalization/softmax")
    again = cpu_evaluator.evaluate(
        task, task.solution_source(), EvalOptions(device="cpu", shape_sets=("dev",))
    )
    assert again.correct, explain(again)


def test_the_worker_is_never_sent_reference_data(cpu_evaluator, monkeypatch):
    """Reading harness memory from the worker gains nothing: no reference crosses into its process."""
    import torch
    from warpgym.env.judge import pool
    from warpgym.tasks import get_task

    sent: list[object] = []
    real_send = pool.wire.send

    def spy(conn, obj):
        sent.append(obj)
        return real_send(conn, obj)

    monkeypatch.setattr(pool.wire, "send", spy)
    task = get_task("normalization/softmax")
    result = cpu_evaluator.evaluate(
        task, task.solution_source(), EvalOptions(device="cpu", shape_sets=("dev",))
    )
    assert result.correct, explain(result)

    def tensors(obj) -> list:
        if isinstance(obj, torch.Tensor):
            return [obj]
        if isinstance(obj, dict):
            return [t for v in obj.values() for t in tensors(v)]
        if isinstance(obj, list | tuple):
            return [t for v in obj for t in tensors(v)]
        return []

    assert sent and {m["op"] for m in sent} >= {"load", "run"}
    # Tensors cross only as a call's inputs, and none of them is an answer.
    assert all(not tensors({k: v for k, v in m.items() if k != "inputs"}) for m in sent)
    runs = [m["inputs"] for m in sent if m["op"] == "run"]
    assert runs and all(set(inputs) == {"x"} for inputs in runs)
    for inputs in runs:
        expected = task.reference(**inputs)
        assert not any(t.shape == expected.shape and torch.allclose(t.float(), expected.float(), atol=1e-3)
                       for m in sent for t in tensors(m)), "a reference output was sent to a worker"
    assert not any(k in m for m in sent for k in ("expected", "reference", "outputs"))


def test_replies_must_answer_their_request():
    """The channel check on its own: an unsolicited frame is caught at the next request."""
    worker = Worker("cpu", "run")
    try:
        assert worker.request({"op": "ping"}, timeout=60)["ok"]
        assert worker.proc is not None
        # Play the candidate: write a well-formed frame straight into the worker's side of the socket.
        from warpgym.env.protocol import wire

        wire.send(worker.conn, {"op": "ping"})  # a second request whose reply nobody will read
        with pytest.raises(Exception) as caught:
            worker.request({"op": "ping"}, timeout=60)
        assert "channel" in str(caught.value) or "request" in str(caught.value)
        assert worker.take_incidents()[0][0] == "forged-reply"
    finally:
        worker.stop()


def test_sandbox_report_is_in_every_result(judge):
    result = judge("math/add", "uninitialised_output")
    assert result.sandbox is not None
    assert "audit" in result.sandbox["applied"]
    every = set(result.sandbox["applied"]) | set(result.sandbox["not_applied"])
    assert {"network", "filesystem", "processes", "file-size", "memory", "environment"} <= every
    assert all(isinstance(v, str) and v for v in result.sandbox["not_applied"].values())


def test_a_fresh_evaluator_for_patching_candidates_is_not_needed(cpu_evaluator, judge):
    """After a candidate patched torch inside the workers, both are replaced: the next verdict is clean."""
    judge("math/add", "patch_timer")
    assert not cpu_evaluator.run_worker.alive
    from warpgym.tasks import get_task

    task = get_task("math/add")
    result = cpu_evaluator.evaluate(
        task, task.solution_source(), EvalOptions(device="cpu", shape_sets=("dev",))
    )
    assert result.correct and not result.violations, explain(result)


def test_every_loophole_in_the_design_has_a_candidate():
    names = {row[0] for row in LOOPHOLES} | {
        "low_precision_kernel",
        "constant_output",
        "cache_by_pointer",
        "out_of_bounds",
        "read_ssh",
        "fill_disk",
        # tests/test_interpreter_compat.py
        "interpreter_gap_dodge",
        "interpreter_gap_honest",
        "dot_tf32_default",
        "honest_matmul_tf32x3",
        # tests/adversarial/test_interpreter_grid.py
        "row_overrun_store",
        "tail_overrun_store",
        "softmax_rows_interleaved",
        # tests/adversarial/test_interpreter_races.py
        "race_rmw_sum",
        "race_intra_program_scan",
        "honest_sum_atomic_zeroed",
        "honest_sum_last_program",
        "honest_sum_spin_lock",
        "honest_cumsum_assoc_scan",
        "honest_add_overlapping_tail",
        # tests/adversarial/test_host_memory.py
        "scratch_assumed_zero",
        "onehot_write_ones_only",
        "alias_input_identity",
        "onehot_host_shortcut",
        "raw_write_classbody",
        "raw_write_pointer_chase",
        "raw_write_then_copy",
        "honest_onehot_fill_then_mark",
        "honest_onehot_zeros_then_mark",
        "honest_pixel_shuffle_gather",
        "honest_numpy_kernel_flag",
        "honest_index_copy_clone",
        "honest_workspace_at_import",
        # tests/adversarial/test_timed_switch.py, and on a GPU tests/gpu/test_timed_trace_gpu.py
        "timed_torch_switch",
        "timed_cached_answer",
        "timed_kept_answer_token_kernel",
        "timed_kept_answer_copied",
        "timed_short_tail",
        "timed_repaired_tail",
        # tests/adversarial/test_known_inputs.py
        "stored_answers",
        # GPU-only: tests/gpu/test_adversarial_gpu.py
        "side_stream",
        "side_stream_under_spin",
        "patch_timer_late",
        "uninitialised_shared",
    }
    from .conftest import CANDIDATES

    on_disk = {p.stem for p in CANDIDATES.glob("*.py")}
    assert on_disk <= names, f"candidates without a test: {on_disk - names}"


@pytest.fixture(scope="module")
def confined(tmp_path_factory):
    """An evaluator whose workers protect a stand-in home directory (holding a fake SSH key) and have
    small disk limits: 8 MiB per file, 32 MiB for the private directory."""
    from warpgym.env import Evaluator
    from warpgym.env.judge.pool import Worker

    home = tmp_path_factory.mktemp("home")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE KEY----- warpgym-test-secret")
    limits = {"protect": [str(home)], "file_bytes": 8 << 20, "disk_bytes": 32 << 20}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WARPGYM_TEST_REAL_HOME", str(home))  # where the candidate will look
        evaluator = Evaluator("cpu")
        evaluator.run_worker = Worker("cpu", "run", sandbox=limits)
        evaluator.compile_worker = Worker("cpu", "compile", sandbox=limits)
        yield evaluator
        evaluator.close()


def test_reading_ssh_keys_is_refused_and_nothing_leaks(confined, judge):
    result = judge("math/add", "read_ssh", evaluator=confined)
    assert result.correct is False, explain(result)
    messages = [v.message for v in result.violations if v.code == "sandbox-filesystem"]
    assert any("id_rsa" in m and "home directories" in m for m in messages), explain(result)
    assert "warpgym-test-secret" not in result.stdout + result.feedback
    assert "STOLEN" not in result.stdout


def test_filling_the_disk_fails_alone_and_the_next_candidate_is_fine(confined, judge):
    result = judge("math/add", "fill_disk", evaluator=confined)
    assert result.correct is False, explain(result)
    message = next(c.message for c in result.cases if c.passed is False)
    assert "big.bin: File too large" in message, message
    if "disk" in (result.sandbox or {}).get("applied", {}):
        assert "No space left" in message, message
    from warpgym.tasks import get_task

    task = get_task("math/add")
    again = confined.evaluate(task, task.solution_source(), EvalOptions(device="cpu", shape_sets=("dev",)))
    assert again.correct and not again.violations, explain(again)


def test_speedups_past_the_roofline_or_the_vendor_library_are_flagged(monkeypatch):
    """The timing stage's sanity checks, driven with a faked GPU reply (the real run is in tests/gpu): a
    time no device could achieve, or one far below the vendor library's, is reported as suspicious."""
    from warpgym.env.common.device import KNOWN_CEILINGS
    from warpgym.env.common.timing import Calls
    from warpgym.env.judge import bench, feedback
    from warpgym.env.judge.evaluator import Evaluator
    from warpgym.env.judge.result import CaseResult, EvalResult
    from warpgym.env.protocol.messages import RunReply
    from warpgym.tasks import get_task

    class FakeGPUWorker:
        alive = False

        def request(self, msg, timeout):
            if msg["op"] == "stage":  # the timing window's input sets, sent before its blocks
                return {"ok": True, "sets": len(msg["input_sets"])}
            assert msg["op"] == "time_block"
            calls = msg["calls"]
            return {"ok": True, "event_ms": [0.01] * calls, "wall_ms": [0.01] * calls,
                    "issue_ms": [0.005] * calls, "warmup_call_ms": 0.01, "tampered": [], "forbidden_ops": {}}

        def stop(self):
            pass

    class FakeBaselines:  # eager at 1 ms and the vendor library at 0.9 ms, measured beside the candidate
        errors: dict = {}

        def __init__(self, *args, **kwargs):
            pass

        def prepare(self):
            pass

        def sides(self):
            return {name: (lambda calls, *rest, ms=ms: (Calls([ms] * calls, [ms] * calls, [0.0] * calls), ms))
                    for name, ms in (("eager", 1.0), ("vendor", 0.9))}

        def close(self):
            pass

    from warpgym.env.judge import channel, references

    monkeypatch.setattr(channel, "call_inputs", lambda *args, **kwargs: {})  # bench inputs: gigabytes
    monkeypatch.setattr(references, "output_meta", lambda *args: [])  # no inputs to size them by
    task = get_task("math/add")
    evaluator = Evaluator("cpu")
    evaluator.run_worker = FakeGPUWorker()
    evaluation = evaluator.evaluation(task, task.solution_source(), EvalOptions(device="cpu"))
    monkeypatch.setattr(evaluation, "run", lambda check, settle_ms=0.0: RunReply(ok=True, outputs=[]))
    monkeypatch.setattr(
        evaluation,
        "judge",
        lambda check, reply: CaseResult(check.shape_set, check.case, check.seed, check.distribution, True),
    )
    monkeypatch.setattr(bench, "Baselines", FakeBaselines)
    monkeypatch.setattr(bench, "ceilings_for", lambda device: KNOWN_CEILINGS["H200"])
    result = EvalResult(task=task.id, target="sm_90a", device="NVIDIA H200", correct=True, compiled=True)
    evaluation.result = result
    bench.timing(evaluation)
    # 3 GiB in 0.01 ms would be 300 TB/s, 75x the H200's bandwidth; and 90x faster than the vendor library.
    assert any("the device's roofline" in s for s in result.suspicious), result.suspicious
    assert any("faster than the vendor library" in s for s in result.suspicious), result.suspicious
    assert result.timing and result.timing[0].roofline_fraction > 50
    text = feedback.render(result, task)
    assert "roofline" in text
    evaluator.compile_worker.stop()
