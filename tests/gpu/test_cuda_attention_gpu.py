"""The hand-written CUDA references of ptx/attention-fwd and -causal on a GPU, called directly: O against
PyTorch's SDPA in fp32 math and the LSE against fp32 log-sum-exp, at every shape of the dev, heldout and
bench sets, the outputs' memory filled with NaN first so an element never written shows. (The evaluator's
view, arch-verification included, is test_cuda_gemm_gpu.py's test of every ptx extra reference.)
Skipped without CUDA (conftest)."""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from warpgym.env.toolchain import attachments
from warpgym.tasks import get_task
from warpgym.tasks.ptx.attention import attention_forward

pytestmark = pytest.mark.gpu

EXTRAS = {"ptx/attention-fwd": "ptx/attention-fwd-cuda",
          "ptx/attention-fwd-causal": "ptx/attention-fwd-causal-cuda"}
CASES = [(task_id, shape_set, case) for task_id in EXTRAS for shape_set in ("dev", "heldout", "bench")
         for case in get_task(task_id).cases(shape_set)]
HANG_SECONDS = 20.0


def _wait_or_exit(what: str) -> None:
    """Synchronise, but end the run on a kernel that never finishes (a barrier waiting for ever)."""
    done = torch.cuda.Event()
    done.record()
    deadline = time.monotonic() + HANG_SECONDS
    while not done.query():
        if time.monotonic() > deadline:
            print(f"HANG: {what} did not finish in {HANG_SECONDS} s", flush=True)
            os._exit(3)
        time.sleep(0.01)
    torch.cuda.synchronize()


@pytest.fixture(scope="module")
def kernels() -> dict:
    out = {}
    for task_id, extra in EXTRAS.items():
        candidate = get_task(task_id).solution_candidate(extra)
        attachments.install(candidate.attachments)
        namespace: dict = {"__name__": "candidate"}
        exec(compile(candidate.source, f"{extra}.py", "exec"), namespace)  # noqa: S102 - our own file
        out[task_id] = namespace["attention_fwd"]
    attachments.clear()
    return out


def _sdpa_fp32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """SDPA's math backend in fp32, one batch entry at a time (its S x S weights at S = 4096: 2 GB each)."""
    with sdpa_kernel([SDPBackend.MATH]):
        return torch.cat([F.scaled_dot_product_attention(q[i:i + 1].float(), k[i:i + 1].float(),
                                                         v[i:i + 1].float(), is_causal=causal)
                          for i in range(q.shape[0])])


@pytest.mark.parametrize(("task_id", "shape_set", "case"), CASES,
                         ids=[f"{t.split('/')[1]}-{s}-{c['b']}x{c['h']}x{c['s']}" for t, s, c in CASES])
def test_o_and_lse_match_fp32_math_and_every_element_is_written(kernels, task_id, shape_set, case):
    causal = task_id.endswith("causal")
    task = get_task(task_id)
    g = torch.Generator(device="cuda").manual_seed(case["s"] + case["h"])
    shape = (case["b"], case["h"], case["s"], case["d"])
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    poison = (torch.full(shape, float("nan"), device="cuda", dtype=torch.bfloat16),
              torch.full(shape[:3], float("nan"), device="cuda", dtype=torch.float32))
    del poison   # the caching allocator hands these NaN-filled blocks to the outputs
    o, lse = kernels[task_id](q, k, v)
    _wait_or_exit(f"{task_id} at {shape}")
    assert o.shape == shape and o.dtype == torch.bfloat16
    assert lse.shape == shape[:3] and lse.dtype == torch.float32
    assert not torch.isnan(o).any() and not torch.isnan(lse).any()
    ref_o = _sdpa_fp32(q, k, v, causal)
    _, ref_lse = attention_forward(q, k, v, causal)
    tol_o, tol_lse = task.tolerance("bfloat16"), task.tolerance("float32")
    torch.testing.assert_close(o.float(), ref_o, atol=tol_o.atol, rtol=tol_o.rtol)
    rel_l2 = torch.linalg.vector_norm(o.float() - ref_o) / torch.linalg.vector_norm(ref_o)
    assert rel_l2.item() <= tol_o.rel_l2
    torch.testing.assert_close(lse, ref_lse.float(), atol=tol_lse.atol, rtol=tol_lse.rtol)
