"""A verdict is reused only for the task it was reached on. Two suites may share a task id (two KernelBench
folders, each with its ``level1/1_Scale.py``) and a built-in task may be edited under one version; the run's
verdict cache and the server's journal key on what the task is (``task_fingerprint``), not on its id alone.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warpgym.env import EvalOptions
from warpgym.experiments.pool import EvaluatorPool
from warpgym.experiments.serve.cache import verdict_key as serve_key
from warpgym.experiments.serve.models import Submission
from warpgym.experiments.serve.service import eval_options
from warpgym.experiments.verdict_cache import verdict_key
from warpgym.tasks import Tolerance, get_task
from warpgym.tasks.fingerprint import task_fingerprint

sys.path.insert(0, str(Path(__file__).parents[1]))
from twin_suites import DOUBLE, TASK_ID, ReferenceExecutor, imported, twin_suites  # noqa: E402


@pytest.fixture
def suites(tmp_path: Path) -> tuple[Path, Path]:
    return twin_suites(tmp_path)


def test_two_imported_tasks_of_one_id_have_different_fingerprints_and_keys(suites):
    a, b = (imported(root) for root in suites)
    assert a.id == b.id
    assert task_fingerprint(a) == task_fingerprint(imported(suites[0]))
    assert task_fingerprint(a) != task_fingerprint(b)
    options = EvalOptions(device="cpu")
    assert verdict_key(a, DOUBLE, options) != verdict_key(b, DOUBLE, options)
    sub = Submission(task=TASK_ID, source=DOUBLE)
    judged = eval_options(sub.options.model_dump(mode="json"), "cpu")
    assert serve_key(sub, "cpu:cpu:1", judged, task_fingerprint(a)) != \
        serve_key(sub, "cpu:cpu:1", judged, task_fingerprint(b))


def test_the_sizes_rule_of_an_imported_task_is_part_of_what_it_is(suites):
    a = imported(suites[0])
    other_rule = dataclasses.replace(a, model=dataclasses.replace(a.model, sizes_note="dev: by 3 bits"))
    assert task_fingerprint(other_rule) != task_fingerprint(a)


def _scaled(factor: float) -> Any:
    return lambda x, y: (x + y) * factor


@pytest.mark.parametrize("edit", ["reference", "closure", "tolerance", "shapes", "description", "inputs"])
def test_any_edit_of_a_built_in_task_changes_its_fingerprint(edit):
    """What a maintainer may change under one version: the reference's code or the values it closes over,
    a tolerance, a shape set, the statement, the input builder."""
    task = get_task("math/add")
    base = task_fingerprint(task)
    assert task_fingerprint(dataclasses.replace(task)) == base
    changes: dict[str, dict[str, Any]] = {
        "reference": {"reference": lambda x, y: x - y},
        "closure": {"reference": _scaled(2.0)},
        "tolerance": {"tolerances": {**task.tolerances, "float32": Tolerance(1e-3, 1e-3, 1e-3, "looser")}},
        "shapes": {"shapes": {**task.shapes, "dev": task.shapes["dev"][:1]}},
        "description": {"description": task.description + " Twice."},
        "inputs": {"make_inputs": lambda case, s: {}},
    }
    edited = dataclasses.replace(task, **changes[edit])
    assert task_fingerprint(edited) != base
    if edit == "closure":
        assert task_fingerprint(dataclasses.replace(task, reference=_scaled(3.0))) != task_fingerprint(edited)
        assert task_fingerprint(dataclasses.replace(task, reference=_scaled(2.0))) == task_fingerprint(edited)


def test_a_fingerprint_is_the_same_in_another_process():
    """No address or other per-process text in it: a server restarted on the same suite finds its verdicts."""
    ids = ["math/add", "activation/gelu", "normalization/softmax", "matmul/gemm"]
    ids = [i for i in ids if _known(i)]
    code = ("import json, sys\nfrom warpgym.tasks import get_task\n"
            "from warpgym.tasks.fingerprint import task_fingerprint\n"
            "print(json.dumps([task_fingerprint(get_task(i)) for i in sys.argv[1:]]))\n")
    out = subprocess.run([sys.executable, "-c", code, *ids], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert json.loads(out) == [task_fingerprint(get_task(i)) for i in ids]


def _known(task_id: str) -> bool:
    try:
        get_task(task_id)
    except KeyError:
        return False
    return True


def test_the_run_s_cache_judges_each_task_of_one_id_by_itself(suites):
    a, b = (imported(root) for root in suites)
    executor = ReferenceExecutor()
    pool = EvaluatorPool(executor=executor)
    options = EvalOptions(device="cpu")
    assert pool.evaluate(a, DOUBLE, options).correct is True
    assert pool.evaluate(b, DOUBLE, options).correct is False
    assert pool.evaluate(imported(suites[0]), DOUBLE, options).correct is True
    assert executor.calls == 2 and pool.cache_hits == 1
