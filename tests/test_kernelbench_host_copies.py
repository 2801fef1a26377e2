"""An imported problem whose answer is data moved (a transpose, repeated): in strict mode a ModelNew whose
forward builds that answer with host copies (``contiguous()`` of an expanded view, ``copy_`` into an empty
buffer) and launches a kernel for show is refused, as on a built-in layout task; a kernel that moves the
data passes, and with PyTorch calls allowed the copies are allowed too."""

from __future__ import annotations

from pathlib import Path

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.candidate import Candidate
from warpgym.env.judge import triviality
from warpgym.tasks.importers import import_suite

FIXTURES = Path(__file__).parent / "fixtures" / "kernelbench_layout"
CANDIDATES = FIXTURES / "candidates"
TASK = "kernelbench/level1/1_Transpose_repeat"


@pytest.fixture(scope="module")
def task():  # noqa: ANN201
    (imported,) = import_suite("kernelbench", FIXTURES).tasks
    return imported


@pytest.fixture(scope="module")
def evaluator():  # noqa: ANN201
    with Evaluator(device="cpu") as ev:
        yield ev


def _judge(evaluator: Evaluator, task, name: str, **options):  # noqa: ANN001, ANN202
    source = (CANDIDATES / name).read_text()
    options = EvalOptions(device="cpu", shape_sets=("dev",), **options)
    return evaluator.evaluate(task, Candidate(source), options)


@pytest.mark.parametrize(("name", "op"), [("host_contiguous.py", "clone"), ("host_copy_into.py", "copy_")])
def test_host_copies_that_build_the_answer_are_refused_in_strict_mode(task, evaluator, name: str, op: str):  # noqa: ANN001
    result = _judge(evaluator, task, name)
    assert result.correct is False and result.mode == "strict", result.feedback
    (refused,) = [v for v in result.violations if v.code == "torch-op"]
    assert f"{op} (x" in refused.message


def test_a_kernel_that_moves_the_data_is_accepted(task, evaluator):  # noqa: ANN001
    result = _judge(evaluator, task, "transpose_ok.py")
    assert result.correct is True and not result.violations, result.feedback


def test_with_pytorch_calls_allowed_host_copies_are_allowed(task, evaluator):  # noqa: ANN001
    result = _judge(evaluator, task, "host_contiguous.py", allow_torch=True)
    assert result.correct is True and result.mode == "allow-torch", result.feedback


def test_the_audit_finds_no_trivial_answer_for_it(task):  # noqa: ANN001
    assert triviality.audit(task)["trivial"] == []
