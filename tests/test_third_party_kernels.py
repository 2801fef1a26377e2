"""Real Triton kernels nobody here wrote (Liger-Kernel, installed pinned for the tests) judged on the CPU:
the right ones are accepted, or at most not run on the CPU for a named interpreter limitation, never
called wrong; a one-line mutation of each (an off-by-one mask, a wrong divisor, a dropped term) fails.

The candidates are built here from the installed package's source (tests/third_party_kernels.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from warpgym.env import EvalOptions
from warpgym.env.judge.plan import INTERPRETER_LIMITATION
from warpgym.tasks import get_task

sys.path.insert(0, str(Path(__file__).parent))
from third_party_kernels import CASES, candidate  # noqa: E402

pytest.importorskip("liger_kernel", reason="pip install -e '.[test]' installs liger-kernel")

DEV = EvalOptions(device="cpu", shape_sets=("dev",))
RIGHT = [pytest.param(c, id=c.task, marks=pytest.mark.xfail(reason=c.known_issue, strict=True))
         if c.known_issue else pytest.param(c, id=c.task) for c in CASES]
MUTANTS = [pytest.param(c, m, id=f"{c.task}-{m.name}") for c in CASES for m in c.mutants]


@pytest.mark.parametrize("case", RIGHT)
def test_a_right_third_party_kernel_is_never_called_wrong(cpu_evaluator, case):
    result = cpu_evaluator.evaluate(get_task(case.task), candidate(case), DEV)
    assert result.compiled and result.kernels, result.feedback
    assert not result.violations, result.feedback
    if result.correct is None:  # allowed only for a named interpreter limitation
        assert any(c.skipped and c.skipped.startswith(INTERPRETER_LIMITATION) for c in result.cases)
    assert result.correct is True, result.feedback


@pytest.mark.parametrize(("case", "mutant"), MUTANTS)
def test_a_mutated_third_party_kernel_fails(cpu_evaluator, case, mutant):
    source = candidate(case, mutant)
    assert source != candidate(case)
    result = cpu_evaluator.evaluate(get_task(case.task), source, DEV)
    assert result.correct is False, result.feedback
    assert result.feedback.startswith("Verdict: INCORRECT"), result.feedback
