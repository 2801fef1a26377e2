"""The mutation operators of scripts/mutation_ops.py change what they say, and a mutant the suite's new
cases exist for is rejected by the harness."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from warpgym.env import EvalOptions
from warpgym.tasks import get_task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import mutation_ops  # noqa: E402

FIXTURE = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
        acc += x
    mean = tl.sum(acc, axis=0) / n
    diff = tl.where(cols < n, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / n + eps)
    tl.store(out_ptr + row, rstd)


def entry(x, out):
    k[(triton.cdiv(x.shape[0], 4),)](x, out, x.shape[1], 1e-5, BLOCK=64)
'''


def _one(operator: str) -> list[mutation_ops.Mutant]:
    return mutation_ops.mutants(FIXTURE, [operator])


def test_mask_off_by_one_widens_each_bound_check_alone():
    found = _one("mask-off-by-one")
    assert len(found) == 2
    for mutant in found:
        assert mutant.source.count("cols <= n") == 1 and mutant.source.count("cols < n") == 1
        assert mutant.what == "cols < n"


def test_missing_rescale_drops_the_factor_only():
    (mutant,) = _one("missing-online-rescale")
    assert "s = s + tl.exp(x - m_new)" in mutant.source
    assert "tl.exp(m - m_new)" not in mutant.source


def test_eps_moves_outside_the_root():
    (mutant,) = _one("eps-placement")
    assert "tl.sqrt(tl.sum(diff * diff, axis=0) / n) + eps" in mutant.source


def test_one_pass_variance_squares_raw_values_and_subtracts_the_squared_mean():
    (mutant,) = _one("one-pass-variance")
    assert "tl.where(cols < n, x, 0.0) * tl.where(cols < n, x, 0.0)" in mutant.source
    assert "- mean * mean + eps" in mutant.source
    assert "diff = tl.where(cols < n, x - mean, 0.0)" in mutant.source  # the output path is untouched


def test_int32_offsets_tail_tile_and_axis():
    (int32,) = _one("int32-offsets")
    assert "row = tl.program_id(0)\n" in int32.source
    tails = _one("dropped-tail-tile")
    assert any("x.shape[0] // 4" in m.source for m in tails)
    assert any("range(0, n // BLOCK * BLOCK, BLOCK)" in m.source for m in tails)
    axes = _one("wrong-reduction-axis")
    assert len(axes) == 2 and all("axis=1" in m.source for m in axes)


def test_host_code_is_never_mutated_by_kernel_operators():
    for mutant in _one("mask-off-by-one") + _one("wrong-reduction-axis"):
        assert "def entry(x, out):\n    k[triton.cdiv(x.shape[0], 4)," in mutant.source


@pytest.mark.timeout(600)
def test_one_pass_layer_norm_is_rejected(cpu_evaluator):
    """Caught by the held-out case whose rows have mean/std ~1e3 (the dev cases alone pass it). The mutant
    is the one in the kernel those rows take (they fit in registers; longer rows take the loop kernel)."""
    task = get_task("normalization/layer-norm")
    source = task.solution_source()
    loop_kernel_line = source[:source.index("def layer_norm_loop_kernel")].count("\n") + 1
    mutants = mutation_ops.mutants(source, ["one-pass-variance"])
    mutant = next(m for m in mutants if int(m.site[1:].split(":")[0]) < loop_kernel_line)
    result = cpu_evaluator.evaluate(task, mutant.source,
                                    EvalOptions(device="cpu", shape_sets=("dev", "heldout"), timing=False))
    assert result.correct is False
    failed = [c for c in result.cases if c.passed is False]
    assert failed and failed[0].shape_set == "heldout" and "offset" in failed[0].case


def test_a_kill_counts_only_under_as_many_roots_as_asked_and_a_pass_keeps_its_root():
    import mutation_score

    row = {"declaration": "d1"}
    assert not mutation_score._settled({"killed": True, "declaration": "d0"}, row, roots=3)
    assert not mutation_score._settled({"killed": True, "roots": 2, "declaration": "d1"}, row, roots=3)
    assert mutation_score._settled({"killed": True, "roots": 3, "declaration": "d0"}, row, roots=3)
    assert mutation_score._settled({"killed": False, "declaration": "d1"}, row, roots=3)
    assert not mutation_score._settled({"killed": False, "declaration": "d0"}, row, roots=1)

    class Verdicts:
        """Rejects the first two evaluations, passes the third."""

        def __init__(self):
            self.calls = 0

        def evaluate(self, task, source, options):
            from types import SimpleNamespace

            self.calls += 1
            passed = self.calls == 3
            case = SimpleNamespace(passed=passed, message="" if passed else "off", case={"n": 1})
            return SimpleNamespace(correct=passed, cases=[case], violations=[], compile_errors=[],
                                   stage="done" if passed else "correctness", input_seed=1000 + self.calls)

    mutation_score._EVALUATOR = Verdicts()
    try:
        row = {"key": "k", "task": "math/add", "source": "", "declaration": "d"}
        judged = mutation_score.judge(row, roots=5)
        assert judged["killed"] is False and judged["roots"] == 3 and judged["passed_root"] == 1003
        mutation_score._EVALUATOR = Verdicts()
        judged = mutation_score.judge(row, roots=2)
        assert judged["killed"] is True and judged["roots"] == 2 and "passed_root" not in judged
    finally:
        mutation_score._EVALUATOR = None
