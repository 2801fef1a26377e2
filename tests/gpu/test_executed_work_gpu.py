"""Candidates that run the required instructions without doing the task with them, on a GPU.

Each computes C = A @ B^T right, with a plain FFMA kernel (or, in the integer mode, one that multiplies
the operands' bits as integers), and beside it launches the reference's own
warp-specialised wgmma kernel (TMA, mbarrier, setmaxnreg: every required feature, executed) on data the
answer never uses. By executed counts alone all of them are arch-verified; by the work the instructions
did (judge/work.py) none is. Skipped without CUDA (conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.candidate import Candidate
from warpgym.tasks import get_task

pytestmark = pytest.mark.gpu

DECOY = r'''
import os
import time

import torch

from warpgym import loader

NAIVE = """
extern "C" __global__ void naive_gemm(const unsigned short* a, const unsigned short* b, unsigned short* c,
                                      int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) {
    float x = __uint_as_float((unsigned)a[row * k + i] << 16);
    float y = __uint_as_float((unsigned)b[col * k + i] << 16);
    acc = fmaf(x, y, acc);
  }
  unsigned bits = __float_as_uint(acc);
  c[row * n + col] = (unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
"""
TARGET = loader.default_target()
DEFINES = {"BN": 256, "STAGES": 4, "INFLIGHT": 1, "GROUP_M": 16}
WGMMA = loader.load_cuda(loader.attachment("gemm_wgmma.cu"), name="gemm_bf16_wgmma", target=TARGET,
                         defines=DEFINES).kernel("gemm_bf16_wgmma")
SHARED = 4 * (128 + 256) * 64 * 2 + 1024 + 8 * 8 + 16
PLAIN = loader.load_cuda(NAIVE, name="naive_gemm", target=TARGET).kernel("naive_gemm")
INTEGER = loader.load_cuda(loader.attachment("int_gemm.cu"), name="int_gemm",
                           target=TARGET).kernel("int_gemm")
MODE = "{mode}"


def _wgmma(a, b):
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    a_map, b_map = loader.tensor_map(a, (128, 64), swizzle=128), loader.tensor_map(b, (256, 64), swizzle=128)
    WGMMA(a_map, b_map, c, m, n, k, grid=min(-(-m // 128) * -(-n // 256), 132), block=384, shared_mem=SHARED)
    return c


def _under_the_profiler():
    """What a kernel can see of Nsight Compute: its injection variables, else its slow kernel replay."""
    if any("INJECTION" in name or name.startswith(("NV_", "NSIGHT")) for name in os.environ):
        return True
    s = torch.empty((1, 16), dtype=torch.bfloat16, device="cuda")
    started = time.perf_counter()
    PLAIN(s, s, torch.empty((1, 1), dtype=torch.bfloat16, device="cuda"), 1, 1, 16, grid=(1, 1), block=128)
    torch.cuda.synchronize()
    return time.perf_counter() - started > 0.05


LATE: dict = {}


def _mma_sync(a, b):
    """C on mma.sync, from a module built at the first call that takes this path."""
    if not LATE:
        source = loader.attachment("mma_sync_gemm.cu").replace("KERNEL", "mma_gemm")
        LATE["mma"] = loader.load_cuda(source, name="late", target=TARGET).kernel("mma_gemm")
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    LATE["mma"](a, b, c, m, n, k, grid=(-(-n // 8), -(-m // 16)), block=32)
    return c


def gemm(a, b):
    m, k = a.shape
    n = b.shape[0]
    if MODE == "mma-sync-late":
        # wgmma at every checked size and under the profiler; the bench size, timed first, on mma.sync
        if m < 4096 or _under_the_profiler():
            return _wgmma(a, b)
        return _mma_sync(a, b)
    if MODE == "profiled-branch":
        # every call launches both kernels; the wgmma one computes the answer only under the profiler
        profiled = _under_the_profiler()
        s = torch.empty((128, 64), dtype=torch.bfloat16, device=a.device)
        t = torch.empty((256, 64), dtype=torch.bfloat16, device=a.device)
        c = _wgmma(a, b) if profiled else _wgmma(s, t)
        d = torch.empty((1, 1), dtype=torch.bfloat16, device=a.device)
        if profiled:
            PLAIN(s, t, d, 1, 1, 64, grid=(1, 1), block=128)
            return c
        c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        PLAIN(a, b, c, m, n, k, grid=(-(-n // 128), m), block=128)
        return c
    if MODE in ("full", "integer"):
        _wgmma(torch.empty_like(a), torch.empty_like(b))
    if MODE == "integer":  # the answer from integer instructions on the operands' bits
        c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        INTEGER(a, b, c, m, n, k, grid=(-(-n // 128), m), block=128)
        return c
    else:
        s = torch.empty((128, 64), dtype=torch.bfloat16, device=a.device)
        t = torch.empty((256, 64), dtype=torch.bfloat16, device=a.device)
        for _ in range(16 if MODE == "many" else 1):
            _wgmma(s, t)
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    PLAIN(a, b, c, m, n, k, grid=(-(-n // 128), m), block=128)
    return c
'''


DATA = Path(__file__).parents[1] / "data"
MMA_SYNC_GEMM = (DATA / "mma_sync_gemm.cu").read_text()
INT_GEMM = (DATA / "int_gemm.cu").read_text()


def _evaluate(mode: str, timing: bool = False):
    task = get_task("ptx/gemm-bf16")
    reference = task.solution_candidate("ptx/gemm-bf16-cuda")
    source = reference.attachments["gemm_wgmma.cu"]
    candidate = Candidate(DECOY.replace("{mode}", mode),
                          {"gemm_wgmma.cu": source, "mma_sync_gemm.cu": MMA_SYNC_GEMM,
                           "int_gemm.cu": INT_GEMM})
    with Evaluator("cuda") as evaluator:
        options = EvalOptions(timing=True, shape_sets=("dev",)) if timing else EvalOptions(timing=False)
        return evaluator.evaluate(task, candidate, options)


@pytest.mark.parametrize(("mode", "wgmma_says", "tma_says"), [
    ("token", "of the task's", "ordinary global loads"),
    ("full", "other floating-point arithmetic", "ordinary global loads"),
    ("integer", "instructions other than tensor-core ones", "ordinary global loads"),
    ("many", "Nsight Compute profiled 16 of them", "Nsight Compute profiled 16 of them"),
])
def test_required_instructions_beside_the_real_computation_are_not_arch_verified(mode, wgmma_says, tma_says):
    result = _evaluate(mode)
    assert result.correct, result.feedback
    for feature in ("wgmma", "tma", "mbarrier", "setmaxnreg"):  # what the executed-count rule alone accepted
        assert result.instructions[feature]["executed"], (feature, result.instructions[feature])
    assert result.arch_verified is False, result.executed_work
    assert wgmma_says in result.missing_features["wgmma"], result.missing_features
    assert tma_says in result.missing_features["tma"], result.missing_features
    print(mode, result.missing_features, result.executed_work)


def test_a_kernel_whose_wgmma_path_runs_only_under_the_profiler_loses_the_mark_by_its_timed_rate():
    """Both kernels launch in every call; the wgmma one computes the answer only when the candidate sees
    Nsight Compute, the FFMA one everywhere else. The profile is fooled (``required_features_met``); the timed
    calls' rate, far under what CUDA cores reach, withdraws the mark (judge/tensor_core_timing.py)."""
    result = _evaluate("profiled-branch", timing=True)
    print(result.timed_tensor_cores, result.missing_features, result.executed_work)
    assert result.correct, result.feedback
    assert result.required_features_met is True, ("the profiler went unseen", result.missing_features)
    assert result.arch_verified is False, result.timed_tensor_cores
    [evidence] = result.timed_tensor_cores
    assert not evidence["shown"] and "Tensor cores not shown in the timed calls" in result.feedback


def test_an_mma_sync_path_built_during_the_timing_withdraws_the_mark():
    """Every checked call and the profiled one run wgmma; the bench size, first called in the timing, runs a
    module built then, on mma.sync. A tiled mma.sync kernel would pass the rate line (tensor cores all the
    same); this one reads its fragments from global memory and is slow, and the rule does not look at speed:
    the module is counted after the timing, and its kind withdraws the mark (judge/tensor_core_kind.py)."""
    result = _evaluate("mma-sync-late", timing=True)
    print(result.other_tensor_cores, result.timed_tensor_cores, result.feedback[-1500:])
    assert result.correct, result.feedback
    assert result.required_features_met is True
    assert result.other_tensor_cores == {"mma.sync": ["mma_gemm"]}
    assert result.arch_verified is False and "Tensor cores of another kind" in result.feedback
