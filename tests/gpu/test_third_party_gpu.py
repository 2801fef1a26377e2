"""Real third-party Triton kernels (Liger-Kernel) and their mutants on a GPU: every right one accepted
with every case run (bf16 included), every mutant rejected (run on the H200: scripts/gpu_session.sh)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.tasks import get_task

sys.path.insert(0, str(Path(__file__).parents[1]))
from third_party_kernels import CASES, candidate  # noqa: E402

pytestmark = pytest.mark.gpu
pytest.importorskip("liger_kernel", reason="pip install -e '.[test]' installs liger-kernel")

OPTIONS = EvalOptions(device="cuda", shape_sets=("dev", "heldout"), timing=False)


@pytest.fixture(scope="module")
def gpu_evaluator():
    with Evaluator("cuda") as evaluator:
        yield evaluator


@pytest.mark.parametrize("case", CASES, ids=[c.task for c in CASES])
def test_a_right_third_party_kernel_passes_on_the_gpu(gpu_evaluator, case):
    result = gpu_evaluator.evaluate(get_task(case.task), candidate(case), OPTIONS)
    print(f"\n{case.task}: " + result.feedback.replace("\n", "\n    "))
    if case.known_issue and result.correct is False:
        pytest.xfail(case.known_issue)
    assert result.correct is True, result.feedback
    assert not any(c.skipped for c in result.cases), "every case runs on a GPU"


@pytest.mark.parametrize(("case", "mutant"), [(c, m) for c in CASES for m in c.mutants],
                         ids=[f"{c.task}-{m.name}" for c in CASES for m in c.mutants])
def test_a_mutated_third_party_kernel_fails_on_the_gpu(gpu_evaluator, case, mutant):
    result = gpu_evaluator.evaluate(get_task(case.task), candidate(case, mutant), OPTIONS)
    assert result.correct is False, result.feedback
