"""A worker serves many candidates in turn (a cold start costs seconds): nothing one candidate leaves in the
process may change the next one's verdict, and an honest candidate leaves nothing that costs a restart."""

from __future__ import annotations

from warpgym.env import EvalOptions, Evaluator
from warpgym.env.judge.pool import Worker
from warpgym.tasks import get_task

from .conftest import explain

DEV = EvalOptions(device="cpu", shape_sets=("dev",))
HALVED_CDIV = "import triton\n\n_cdiv = triton.cdiv\ntriton.cdiv = lambda a, b: max(1, _cdiv(a, b) // 2)\n"


def test_a_library_function_replaced_by_one_candidate_does_not_reach_the_next():
    task = get_task("math/add")
    honest = task.solution_source()
    saboteur = honest.replace("import triton\n", HALVED_CDIV, 1)
    assert saboteur != honest
    with Evaluator("cpu") as evaluator:
        evaluator.evaluate(task, saboteur, DEV)
        after = evaluator.evaluate(task, honest, DEV)
    assert after.correct is True and not after.violations, explain(after)


def test_honest_candidates_share_one_worker():
    tasks = [get_task(t) for t in ("math/add", "normalization/softmax", "random/dropout", "matmul/matmul")]
    with Evaluator("cpu") as evaluator:
        evaluator.evaluate(tasks[0], tasks[0].solution_source(), DEV)  # starts the worker
        before = Worker.restarts
        for task in tasks:
            result = evaluator.evaluate(task, task.solution_source(), DEV)
            assert result.correct is True, explain(result)
        assert Worker.restarts == before, "the worker was replaced after an honest candidate"


ZEROING_COPY = (
    "import torch\n\n_to = torch.Tensor.to\n"
    "torch.Tensor.to = lambda self, *a, **k: (\n"
    "    _to(self, *a, **k).zero_() if k.get('copy') else _to(self, *a, **k))\n"
)


def test_a_tensor_method_added_to_the_class_by_one_candidate_does_not_reach_the_next():
    """``torch.Tensor.to`` defined on the Python class shadows the C type's for every tensor: the worker
    copies outputs back with the method it took at start, and the process is replaced before the next one."""
    task = get_task("math/add")
    honest = task.solution_source()
    saboteur = honest.replace("import torch\n", ZEROING_COPY, 1)
    assert saboteur != honest
    with Evaluator("cpu") as evaluator:
        first = evaluator.evaluate(task, saboteur, DEV)
        after = evaluator.evaluate(task, honest, DEV)
    assert "tampering" in {v.code for v in first.violations}, explain(first)
    assert "torch.Tensor.to (added)" in first.feedback, first.feedback
    assert after.correct is True and not after.violations, explain(after)
