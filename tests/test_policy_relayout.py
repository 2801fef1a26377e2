"""A copy that changes a tensor's layout is a PyTorch kernel on a GPU, so the CPU's verdict refuses it too.

On the H200 the device trace rejected four of our own convolution references for ATen's copy kernel
(``x.permute(...).contiguous()``), which the CPU judge had passed. The run-time policy now counts a copy
from or into a tensor that is not contiguous in every task, while a contiguous-to-contiguous copy (a
plain memcpy on a GPU, no kernel) stays allowed.
"""

from __future__ import annotations

import pytest
from warpgym.env import Candidate, EvalOptions
from warpgym.tasks import get_task

KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def flat_relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
"""

RELAYOUTS = {
    "transpose there and back": "def relu(x):\n    return flat_relu(x.t().contiguous()).t().contiguous()\n",
    "copy into a transposed view": (
        "def relu(x):\n    out = torch.empty_like(x)\n    out.t().copy_(flat_relu(x).t())\n    return out\n"),
    "clone of a strided view": (
        "def relu(x):\n    y = flat_relu(x.t().clone(memory_format=torch.contiguous_format))\n"
        "    return y.t().clone(memory_format=torch.contiguous_format)\n"),
}

PLAIN_COPIES = (
    "def relu(x):\n"
    "    src = x.contiguous().view(-1).clone()  # contiguous to contiguous: a memcpy on a GPU\n"
    "    staged = torch.empty_like(src)\n"
    "    staged.copy_(src)\n"
    "    return flat_relu(staged).view_as(x)\n"
)


@pytest.mark.parametrize("body", RELAYOUTS.values(), ids=RELAYOUTS.keys())
def test_a_layout_changing_copy_is_refused_outside_layout_tasks(cpu_evaluator, body):
    result = cpu_evaluator.evaluate(get_task("activation/relu"), Candidate(KERNEL + "\n\n" + body),
                                    EvalOptions(device="cpu", timing=False))
    assert not result.correct or result.violations
    assert any(v.code == "torch-op" and "layout-changing copy" in v.message for v in result.violations), \
        result.violations


def test_contiguous_copies_stay_allowed(cpu_evaluator):
    result = cpu_evaluator.evaluate(get_task("activation/relu"), Candidate(KERNEL + "\n\n" + PLAIN_COPIES),
                                    EvalOptions(device="cpu", timing=False))
    assert result.correct and not result.violations, (result.violations, result.feedback)
