"""The attention tasks' ``outliers`` inputs: outliers in q and k, none in v, so an honest bf16 kernel meets
the element-wise bound.

The emulation rounds as the references (and cuDNN) do: scores in fp32, an online softmax over 128-key
blocks, P rounded to bf16 before P @ V, O to bf16. With outliers in v as well, draw 33 of the heldout case
misses the bound (1 of 150 draws did; the causal Triton reference failed this way on the H200)."""

from __future__ import annotations

import math

import pytest
import torch
from warpgym.env.judge.compare import _compare_tensor
from warpgym.tasks import Sampler, get_task

TASK = get_task("ptx/attention-fwd-causal")
CASE = {"b": 1, "h": 2, "s": 1024, "d": 128}


def _rounded_like_a_kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block: int = 128
                           ) -> torch.Tensor:
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    n = s.shape[-1]
    s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    acc = torch.zeros(*q.shape[:-1], v.shape[-1])
    m = torch.full((*q.shape[:-1], 1), float("-inf"))
    total = torch.zeros_like(m)
    for j in range(0, n, block):
        sj = s[..., j:j + block]
        new = torch.maximum(m, sj.amax(-1, keepdim=True))
        alpha, p = torch.exp(m - new).nan_to_num(0.0), torch.exp(sj - new).nan_to_num(0.0)
        total = total * alpha + p.sum(-1, keepdim=True)
        acc = acc * alpha + p.to(torch.bfloat16).float() @ v[..., j:j + block, :].float()
        m = new
    return (acc / total).to(torch.bfloat16)


def _passes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    expected = TASK.reference(q.double(), k.double(), v.double())[0]
    return _compare_tensor(_rounded_like_a_kernel(q, k, v), expected, TASK.tolerance("bfloat16"))["passed"]


def test_outliers_are_in_the_scores_not_in_v():
    inputs = TASK.make_inputs(CASE, Sampler(0, "outliers", "cpu"))
    assert inputs["q"].float().abs().max() > 50 and inputs["k"].float().abs().max() > 50
    assert inputs["v"].float().abs().max() < 10


def test_outliers_in_v_defeat_an_honest_kernel_and_the_inputs_do_not_draw_them():
    sampler, shape = Sampler(33, "outliers", "cpu"), (1, 2, 1024, 128)
    q, k, v = (sampler.tensor(shape, "bfloat16") for _ in range(3))  # v drawn as q and k are
    draw = TASK.make_inputs(CASE, Sampler(33, "outliers", "cpu"))
    assert torch.equal(draw["q"], q) and torch.equal(draw["k"], k) and v.float().abs().max() > 50
    assert not _passes(q, k, v)
    assert _passes(q, k, draw["v"])


@pytest.mark.parametrize("seed", [*range(6), 33])
def test_an_honest_kernel_meets_the_bound_on_the_outliers_inputs(seed):
    inputs = TASK.make_inputs(CASE, Sampler(seed, "outliers", "cpu"))
    assert _passes(inputs["q"], inputs["k"], inputs["v"])
