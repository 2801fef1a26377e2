"""The attention tasks' ``outliers`` inputs: outliers in q and k, none in v, so an honest kernel meets the
element-wise bound.

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


TRITON_ATTENTION = [
    "fusion/attention", "fusion/attention-alibi", "fusion/attention-gqa", "fusion/attention-mqa",
    "fusion/attention-mask", "fusion/cross-attention", "fusion/attention-key-padding",
    "fusion/attention-softcap",
    "fusion/decode-attention", "fusion/attention-sliding-window", "fusion/softmax-matmul",
]


def _with_p_rounded(task, inputs: dict, monkeypatch) -> torch.Tensor:
    """The task's reference as an honest fp16 kernel computes it: fp32 scores and softmax, P rounded to fp16
    before P @ V (fp32 accumulation), the output rounded once."""
    exact = torch.softmax
    monkeypatch.setattr(torch, "softmax", lambda x, dim=-1: exact(x.float(), dim=dim).half().float())
    wide = {n: x.float() if isinstance(x, torch.Tensor) and x.dtype == torch.float16 else x
            for n, x in inputs.items()}
    out = task.reference(**wide)
    monkeypatch.setattr(torch, "softmax", exact)
    return out.half()


@pytest.mark.parametrize("task_id", TRITON_ATTENTION)
def test_triton_attention_inputs_keep_outliers_out_of_v_and_an_honest_kernel_passes(task_id, monkeypatch):
    task = get_task(task_id)
    assert "outliers" in task.distributions
    cases = [c for c in task.shapes["dev"] + task.shapes["heldout"] if c["dtype"] == "float16"]
    for seed in range(40):
        for case in cases:
            inputs = task.make_inputs(case, Sampler(seed, "outliers", "cpu"))
            value = inputs.get("v", inputs.get("v_cache"))
            assert value.float().abs().max() < 10
            expected = task.reference(**{n: x.double() if isinstance(x, torch.Tensor)
                                         and x.is_floating_point() else x for n, x in inputs.items()})
            honest = _with_p_rounded(task, inputs, monkeypatch)
            assert _compare_tensor(honest, expected, task.tolerance("float16"))["passed"], (case, seed)
