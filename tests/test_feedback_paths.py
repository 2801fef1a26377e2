"""Model-facing feedback names no path of the harness's machine; a NUL byte gets a clear message."""

from __future__ import annotations

import sys
import sysconfig

from warpgym.env.judge import feedback
from warpgym.env.judge.result import CaseResult, EvalResult, KernelReport, Violation
from warpgym.env.judge.static import check_source
from warpgym.tasks import get_task

SITE = sysconfig.get_paths()["purelib"]
WORKDIR = "/tmp/warpgym-worker-x1y2/candidate_3.py"


def test_paths_outside_the_candidate_become_placeholders():
    text = (f'{SITE}/torch/nn/functional.py:2135: UserWarning: deprecated\n'
            f'  File "{WORKDIR}", line 12, in add\n'
            "ptxas /tmp/tmpab12/kernel.ptx, line 5; error\n"
            "see https://triton-lang.org/main/index.html, 12.5 GB/s, ratio 3/4, x / y, a/b/c.py")
    out = feedback.redact_paths(text)
    assert SITE not in out and "/tmp/" not in out and sys.prefix not in out
    assert "<path>/functional.py:2135: UserWarning" in out
    assert 'File "candidate.py", line 12' in out and "<path>/kernel.ptx, line 5" in out
    assert out.endswith("see https://triton-lang.org/main/index.html, 12.5 GB/s, ratio 3/4, x / y, a/b/c.py")


def test_rendered_feedback_redacts_tool_output_but_keeps_policy_sentences():
    task = get_task("math/add")
    result = EvalResult(task=task.id, target="sm_90a", device="cpu", stage="correctness", compiled=True,
                        correct=False)
    result.compile_errors.append(f"{SITE}/triton/compiler/code_generator.py:88: error in {WORKDIR}")
    result.runtime_error = f"RuntimeError raised at {sys.prefix}/lib/python3/site.py"
    result.stdout = f"{SITE}/numpy/core/fromnumeric.py:3504: RuntimeWarning: Mean of empty slice"
    result.kernels.append(KernelReport("add_kernel", "sm_90a", {}, registers=16,
                                       warnings=["ptxas warning in /tmp/tmpq/add.ptx"]))
    result.cases.append(CaseResult("dev", {"n": 8}, 0, "normal", False, message=f"failed in {WORKDIR}"))
    result.violations.append(Violation("file-access", "the candidate tried reading /etc/shadow; refused"))
    text = feedback.render(result, task)
    assert SITE not in text and sys.prefix not in text and "/tmp/" not in text
    assert "candidate.py" in text and "<path>/fromnumeric.py:3504: RuntimeWarning" in text
    assert "<path>/add.ptx" in text
    assert "reading /etc/shadow" in text  # what the candidate itself tried to reach stays named


def test_a_nul_byte_is_named_with_its_line():
    report = check_source("import triton\n\nx = 1\x00\n", "add", ["x", "y"])
    assert not report.ok
    (violation,) = report.violations
    assert violation.line == 3 and "NUL byte" in violation.message and "line 3" in violation.message
    assert "None" not in violation.message
