"""Edge cases of the output comparison (env/judge/compare.py) that the H200 run brought up."""

from __future__ import annotations

import torch
from warpgym.env.judge.compare import _compare_tensor
from warpgym.tasks.spec import Tolerance

EXACT = Tolerance(0.0, 0.0, 0.0)
FP32 = Tolerance(1e-5, 1e-4, 1e-5)


def test_an_exact_task_expects_what_the_output_dtype_can_hold():
    # masked_fill(x_bf16, mask, -10000.0) stores bf16(-10000) = -9984: that, not -10000, is exact.
    reference = torch.tensor([-10000.0, 1.5], dtype=torch.float64)
    right = torch.tensor([-10000.0, 1.5]).to(torch.bfloat16)
    assert float(right[0]) == -9984.0
    assert _compare_tensor(right, reference, EXACT)["passed"]
    wrong = torch.tensor([-10048.0, 1.5], dtype=torch.bfloat16)
    assert not _compare_tensor(wrong, reference, EXACT)["passed"]


def test_a_single_value_is_judged_element_wise():
    # cross-entropy of one row whose target has the largest logit by ~13: the loss is 3e-6 in float64,
    # and exactly 0 from a correct float32 kernel (lse = max + 3e-6 rounds to max); within atol.
    assert _compare_tensor(torch.zeros(1), torch.tensor([3e-6], dtype=torch.float64), FP32)["passed"]
    assert not _compare_tensor(torch.zeros(1), torch.tensor([3e-4], dtype=torch.float64), FP32)["passed"]


def test_the_norm_wise_bound_still_catches_errors_each_within_tolerance():
    reference = torch.ones(1000, dtype=torch.float64)
    result = _compare_tensor(torch.full((1000,), 1 + 9e-5), reference, FP32)
    assert not result["passed"] and "relative L2" in result["message"]
    # Many values, each within atol of a small reference: zeros still fail on the norm-wise bound.
    small = torch.full((1000,), 3e-6, dtype=torch.float64)
    result = _compare_tensor(torch.zeros(1000), small, FP32)
    assert not result["passed"] and "relative L2" in result["message"]


FP16 = Tolerance(1e-7, 1e-2, 2e-3)


def test_the_norm_wise_bound_of_a_half_output_is_against_what_half_precision_holds():
    # A softmax over 2^26 elements: ~1e-8 per element, below float16's smallest subnormal (6e-8). The
    # correctly rounded answer is (nearly) all zeros, and it passes; before, it failed at relative L2 ~1.
    torch.manual_seed(0)
    reference = torch.softmax(torch.randn(1 << 20, dtype=torch.float64), 0) / 64
    best = reference.to(torch.float16)
    assert float((best.to(torch.float64) - reference).norm() / reference.norm()) > 0.5, "it must underflow"
    assert _compare_tensor(best, reference, FP16)["passed"]
    # Where float16 holds the values (as subnormals), zeros within atol of each still fail on the norm-wise
    # bound, and so does a 0.5% bias.
    held = torch.full((1000,), 9e-8, dtype=torch.float64)
    result = _compare_tensor(torch.zeros(1000, dtype=torch.float16), held, FP16)
    assert not result["passed"] and "relative L2" in result["message"]
    ones = torch.ones(1000, dtype=torch.float64)
    result = _compare_tensor((ones * 1.005).to(torch.float16), ones, FP16)
    assert not result["passed"] and "relative L2" in result["message"]


def test_a_compile_error_names_its_cause_once():
    from warpgym.env.worker.triton_launches import _compile_error_text

    def raised(message: str, cause: BaseException) -> BaseException:
        try:
            raise RuntimeError(message) from cause
        except RuntimeError as exc:
            return exc

    # triton 3.6: the CompilationError shows the source; the AssertionError behind it is the reason.
    text = _compile_error_text(raised("at 23:14: acc = tl.dot(a, b, acc)", AssertionError()))
    assert text.splitlines()[-1] == "AssertionError: "
    # triton 3.9 already ends its message with the cause: it is not repeated.
    cause = AttributeError("module 'triton.language' has no attribute 'relu_max'")
    text = _compile_error_text(raised(f"at 3:4: tl.relu_max(x)\n\n{cause!r}", cause))
    assert text.count("has no attribute") == 1 and text.endswith(f"{cause!r}")


FP32_TIGHT = Tolerance(1e-6, 1e-5, 1e-5)
HINT = "a float32 task must compute in float32"


def _softmax_case():
    torch.manual_seed(0)
    x = torch.randn(64, 1000, dtype=torch.float64)
    return x, torch.softmax(x, -1)


def test_the_precision_hint_comes_with_half_precision_arithmetic():
    x, reference = _softmax_case()
    shifted = x - x.max(-1, keepdim=True).values
    for half in (torch.float16, torch.bfloat16):
        stored = reference.to(half).float()  # the answer kept in a half-precision buffer
        exp = shifted.to(half).exp().float()  # exp in half precision, the sum in float32
        for out in (stored, exp / exp.sum(-1, keepdim=True)):
            result = _compare_tensor(out, reference, FP32_TIGHT)
            assert not result["passed"] and HINT in result["message"], result["message"]
    loaded = torch.softmax(x.to(torch.float16).float(), -1)  # inputs loaded as float16
    assert HINT in _compare_tensor(loaded, reference, FP32_TIGHT)["message"]


def test_a_logic_bug_gets_no_precision_hint():
    x, reference = _softmax_case()
    one_row = reference.clone()
    one_row[3] = torch.softmax(x[3] * 1.01, -1)
    bugs = {"off by one": torch.roll(reference, 1, -1), "a wrong constant": reference * (1 + 1e-3),
            "one wrong row": one_row, "an added epsilon": reference + 1e-5}
    for name, out in bugs.items():
        result = _compare_tensor(out.float(), reference, FP32_TIGHT)
        assert not result["passed"], name
        assert HINT not in result["message"], (name, result["message"])
    # A different formula of the same size as float16 rounding: exact GELU where the tanh form is asked.
    g = torch.randn(100_000, dtype=torch.float64) * 2
    tanh_form = torch.nn.functional.gelu(g, approximate="tanh")
    result = _compare_tensor(torch.nn.functional.gelu(g.float()), tanh_form, FP32_TIGHT)
    assert not result["passed"] and HINT not in result["message"], result["message"]


def test_an_answer_beyond_float16_s_range_is_the_infinity_float16_holds_and_nothing_else():
    tol = Tolerance(1e-3, 1e-2, 2e-3, "fp16")
    ref = torch.tensor([75727.5, -70000.0, 1.0, 65000.0], dtype=torch.float64)
    right = ref.to(torch.float16)  # inf, -inf, 1, 65000
    assert torch.isinf(right[:2]).all()
    assert _compare_tensor(right, ref, tol)["passed"]
    wrong_sign = right.clone()
    wrong_sign[0] = float("-inf")
    assert not _compare_tensor(wrong_sign, ref, tol)["passed"]
    inf_in_range = right.clone()
    inf_in_range[3] = float("inf")  # 65000 fits float16: an infinity there is wrong
    assert not _compare_tensor(inf_in_range, ref, tol)["passed"]


def test_where_the_answer_is_infinite_only_that_infinity_passes():
    """A relative bound around an infinity is infinite: NaN, the other infinity or any finite value would all
    be within it."""
    tol = FP32
    ref = torch.tensor([1.0, float("inf"), float("-inf"), 2.0], dtype=torch.float64)
    for wrong in (float("nan"), float("-inf"), 3.0):
        out = torch.tensor([1.0, wrong, float("-inf"), 2.0])
        assert _compare_tensor(out, ref, tol)["passed"] is False, wrong
    right = torch.tensor([1.0, float("inf"), float("-inf"), 2.0])
    assert _compare_tensor(right, ref, tol)["passed"] is True
