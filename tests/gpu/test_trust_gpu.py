"""The trust corpus on the device: attacks whose work only a GPU trace can see (a library kernel reached
through PyTorch, profilers stopped or dodged, code that is honest in the interpreter only).

Written against the device evidence: inside a checked call only the candidate's own kernels may run
(``device-library-kernel`` names any other), large host-to-device copies are ``device-host-copy``, and
a trace the candidate interrupted is ``device-trace``. Run on the H200 machine:
``python -m pytest tests/gpu/test_trust_gpu.py -m gpu``. Skipped without CUDA (tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, EvalResult, Evaluator
from warpgym.tasks import get_task

pytestmark = pytest.mark.gpu

TRUST = Path(__file__).parent.parent / "adversarial" / "candidates" / "trust"
CHECKED = EvalOptions(device="cuda", shape_sets=("dev",), timing=False)
TIMED = EvalOptions(device="cuda", shape_sets=("dev",), timing=True, warmup=3, reps=10)

# candidate, task, violation codes (one must be found)
DEVICE_ATTACKS = [
    ("profiler_env_switch", "normalization/softmax", {"device-library-kernel", "torch-op",
                                                      "torch-internals"}),
    ("profiler_stop", "normalization/softmax", {"device-trace", "device-library-kernel", "torch-op",
                                                "torch-internals"}),
    ("interp_cuda_switch", "normalization/softmax", {"device-library-kernel", "torch-op"}),
    ("harness_reference_paused", "normalization/softmax", {"device-library-kernel", "forbidden-import"}),
    ("grid_callable_compute", "normalization/softmax", {"device-library-kernel", "torch-op"}),
    ("autotune_hook_compute", "normalization/softmax", {"device-library-kernel", "torch-op"}),
    ("custom_op_named_allowed", "normalization/softmax", {"device-library-kernel", "torch-op",
                                                          "torch-internals"}),
    ("override_allowed_op", "normalization/softmax", {"device-library-kernel", "torch-op",
                                                      "torch-internals"}),
    ("result_iter_compute", "math/add", {"device-library-kernel", "torch-op", "output-type"}),
    ("layout_transpose_contiguous", "index/transpose", {"device-library-kernel", "torch-op"}),
    ("tensor_subclass_method_in_policy", "normalization/softmax", {"device-library-kernel", "torch-op"}),
    ("tensor_attribute_shadows_launch_method", "normalization/softmax", {"device-library-kernel",
                                                                         "uncompiled-kernel"}),
    ("storage_attribute_shadows_launch_method", "math/add", {"device-library-kernel", "uncompiled-kernel"}),
    ("index_rows_copied_on_host", "index/embedding", {"device-library-kernel", "torch-op"}),
    ("layout_pad_fill_copy", "spatial/pad-constant", {"device-library-kernel", "torch-op"}),
    ("dlpack_numpy", "normalization/softmax", {"device-host-copy", "host-compute"}),
    # A graph replay is no PyTorch op: the capture is seen when it runs under the import's policy, and a
    # library kernel replayed is named by the device trace.
    ("cuda_graph_replay", "normalization/softmax", {"device-library-kernel", "torch-op"}),
]


@pytest.fixture(scope="module")
def gpu_evaluator() -> Iterator[Evaluator]:
    evaluator = Evaluator("cuda")
    yield evaluator
    evaluator.close()


def judge(evaluator: Evaluator, task_id: str, name: str, options: EvalOptions = CHECKED) -> EvalResult:
    return evaluator.evaluate(get_task(task_id), (TRUST / f"{name}.py").read_text(), options)


def explain(result: EvalResult) -> str:
    return "\n".join(
        [f"stage={result.stage} correct={result.correct}"]
        + [f"{v.code}: {v.message}" for v in result.violations]
        + result.suspicious
        + [c.message for c in result.cases if c.passed is False][:3]
        + result.skipped_checks
    )


@pytest.mark.parametrize(("name", "task_id", "codes"), DEVICE_ATTACKS, ids=[r[0] for r in DEVICE_ATTACKS])
def test_work_the_device_did_for_the_candidate_is_named(gpu_evaluator, name, task_id, codes):
    result = judge(gpu_evaluator, task_id, name)
    assert result.correct is not True, explain(result)
    hit = [v for v in result.violations if v.code in codes]
    assert hit and any(len(v.message) > 40 for v in hit), f"expected one of {codes}:\n{explain(result)}"


def test_a_profiler_switch_is_caught_when_timed_too(gpu_evaluator):
    """Timed without a profiler, the candidate takes its library path: the verdict must not carry a speedup
    for it."""
    result = judge(gpu_evaluator, "normalization/softmax", "profiler_env_switch", TIMED)
    assert result.correct is not True, explain(result)
    assert not result.timing or any(v.code.startswith("device-") for v in result.violations), explain(result)


def test_a_kernel_right_only_in_the_interpreter_fails_on_the_device(gpu_evaluator):
    result = judge(gpu_evaluator, "math/add", "interp_branch_kernel")
    assert result.correct is not True, explain(result)
    asked = any(v.code == "interpreter-detection" for v in result.violations)
    assert asked or any(c.passed is False for c in result.cases), explain(result)


def test_a_kernel_body_that_calls_host_code_only_when_interpreted_is_honest_on_the_device(gpu_evaluator):
    """Compiled, the call-out is dropped and the kernel copies an unwritten scratch buffer: wrong."""
    result = judge(gpu_evaluator, "normalization/softmax", "kernel_body_callout")
    assert result.correct is not True, explain(result)


@pytest.mark.parametrize(
    ("name", "task_id"),
    [
        ("honest_callable_object", "math/add"),
        ("honest_heuristics_strided", "normalization/softmax"),
        ("honest_grouped_tiles", "index/transpose"),
    ],
)
def test_honest_unusual_candidates_pass_on_the_device(gpu_evaluator, name, task_id):
    result = judge(gpu_evaluator, task_id, name, TIMED)
    assert result.correct is True and not result.violations, explain(result)
    assert not result.suspicious, explain(result)


def test_an_honest_candidate_s_kernels_are_what_the_device_trace_shows(gpu_evaluator):
    """The trace is wired into every checked call: an honest candidate's verdict lists its own kernel as
    what ran, and nothing else."""
    result = judge(gpu_evaluator, "math/add", "honest_callable_object")
    assert result.correct is True, explain(result)
    assert result.device_activity and result.device_activity["traced_calls"] > 0, result.device_activity
    names = set(result.device_activity["kernels"])
    assert names and names <= {k.name for k in result.kernels}, (names, [k.name for k in result.kernels])
