"""Error kinds from stored verdicts, and what counts as a fix for each."""

from __future__ import annotations

import pytest
from fixit_helpers import verdict
from warpgym.experiments.fixit import KINDS, classify, fixes
from warpgym.experiments.fixit.kinds import headline


@pytest.mark.parametrize(
    ("made", "kind"),
    [
        ("compile", "compile"),
        ("syntax", "compile"),
        ("policy", "policy"),
        ("timeout", "timeout"),
        ("runtime", "runtime"),
        ("numerical", "numerical"),
        ("missing_instruction", "missing_instruction"),
    ],
)
def test_each_failure_has_its_kind(made: str, kind: str) -> None:
    assert classify(verdict(made)) == kind
    assert kind in KINDS


def test_slow_is_a_kind_only_below_the_bar_and_only_when_timed() -> None:
    assert classify(verdict("ok", speedup=0.6)) == "slow"
    assert classify(verdict("ok", speedup=0.6), slow_below=0.5) is None
    assert classify(verdict("ok", speedup=1.4)) is None
    assert classify(verdict("ok")) is None  # a CPU run: no timing, nothing slow
    assert classify(verdict("ok", speedup=0.6), baseline="torch.compile") is None  # another baseline's figure


def test_no_result_or_an_unchecked_one_has_no_kind() -> None:
    assert classify(None) is None
    unchecked = verdict("ok")
    unchecked.update(correct=None, stage="instructions")  # CUDA on a CPU: built, not run
    assert classify(unchecked) is None


def test_a_timeout_wins_over_a_plain_runtime_error() -> None:
    v = verdict("runtime")
    v["cases"].append({"passed": False, "message": "timed out: hung"})
    assert classify(v) == "timeout"


def test_fixes_need_a_solved_candidate_and_for_slow_a_faster_one() -> None:
    assert fixes("numerical", verdict("numerical"), verdict("ok"))
    assert not fixes("numerical", verdict("numerical"), verdict("runtime"))
    assert not fixes("numerical", verdict("numerical"), verdict("missing_instruction"))
    assert fixes("missing_instruction", verdict("missing_instruction"), verdict("ok"))
    assert fixes("slow", verdict("ok", 0.5), verdict("ok", 1.3))
    assert not fixes("slow", verdict("ok", 0.5), verdict("ok", 0.8))  # faster, still under the bar
    assert not fixes("slow", verdict("ok", 0.5), verdict("ok"))  # not timed: no evidence it is faster


def test_headlines_name_the_failure() -> None:
    assert "no attribute 'mean'" in headline("compile", verdict("compile"))
    assert headline("policy", verdict("policy")).startswith("[torch-op]")
    assert "IndexError" in headline("runtime", verdict("runtime"))
    assert "541 of 800" in headline("numerical", verdict("numerical"))
    assert "wgmma" in headline("missing_instruction", verdict("missing_instruction"))
    assert "0.50x" in headline("slow", verdict("ok", 0.5))


KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
{tail}    return out
'''
RAISES_TIMED_OUT = KERNEL.format(tail='''    print("timed out")
    raise RuntimeError("timed out: no answer within 30 s (an infinite loop); the worker was killed")
''')
LOOPS = KERNEL.format(tail='''    while out.numel():
        pass
''')


def test_a_candidate_s_own_words_do_not_choose_its_kind(cpu_evaluator) -> None:
    """An exception (and output) that says "timed out" is still an exception: the label comes from how the
    judge recorded the failure, and a real overrun is still a timeout."""
    from warpgym.env import EvalOptions, Limits
    from warpgym.tasks import get_task

    def judged(source: str, seconds: float) -> dict:
        options = EvalOptions(device="cpu", timing=False, limits=Limits(run=seconds))
        return cpu_evaluator.evaluate(get_task("math/add"), source, options).to_dict()

    raised = judged(RAISES_TIMED_OUT, 60.0)
    assert "timed out" in raised["runtime_error"] and classify(raised) == "runtime"
    looped = judged(LOOPS, 5.0)
    assert classify(looped) == "timeout"
