"""The loader and the `ptx` suite on a GPU (the H200): launches, faults, every reference correct and
arch-verified (present AND executed), and dead code caught. Skipped without CUDA (conftest)."""
# ruff: noqa: E501  (embedded CUDA sources keep their own line lengths)

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from warpgym.env import EvalOptions, Evaluator
from warpgym.env.candidate import Candidate
from warpgym.env.judge import profile
from warpgym.env.toolchain import loader
from warpgym.tasks import all_tasks, get_task

pytestmark = pytest.mark.gpu

KERNELS = r"""
extern "C" __global__ void scale(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
extern "C" __global__ void big_smem(float* out, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = i;
  __syncthreads();
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += buf[n - 1 - i];
  atomicAdd(out, acc);
}
extern "C" __global__ void rank(int* out) {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}
"""


@pytest.fixture(scope="module")
def module():
    return loader.load_cuda(KERNELS, name="gpu_smoke", target="sm_90a")


def test_launch_on_the_current_stream(module):
    x = torch.arange(1000, device="cuda", dtype=torch.float32)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        module.kernel("scale")(x, 3.0, 1000, grid=8, block=128)
    stream.synchronize()
    assert torch.equal(x, torch.arange(1000, device="cuda", dtype=torch.float32) * 3)


def test_dynamic_shared_memory_above_48kb_and_clusters(module):
    n = 100 * 1024 // 4
    out = torch.zeros(1, device="cuda")
    module.kernel("big_smem")(out, n, grid=1, block=256, shared_mem=n * 4)
    ranks = torch.full((8,), -1, dtype=torch.int32, device="cuda")
    module.kernel("rank")(ranks, grid=8, block=32, cluster=4)
    torch.cuda.synchronize()
    # An fp32 sum of 25,600 values near 3e8 carries a few ulps of rounding (the H200 gave 384 over 327667200).
    assert out.item() == pytest.approx(n * (n - 1) / 2, rel=1e-5)
    assert ranks.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_a_faulting_kernel_is_an_error_not_a_wrong_answer(tmp_path):
    script = tmp_path / "fault.py"
    script.write_text(textwrap.dedent('''
        import torch
        from warpgym import loader
        m = loader.load_cuda('extern "C" __global__ void bad(float* x) { x[(1ull << 40) + threadIdx.x] = 1.f; }',
                             name="bad")
        x = torch.zeros(16, device="cuda")
        m.kernel("bad")(x, grid=1, block=32)
        torch.cuda.synchronize()
        print("no error")
    '''))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "no error" not in proc.stdout
    assert "illegal" in proc.stderr.lower() or "CUDA" in proc.stderr


@pytest.mark.parametrize("task_id", [t.id for t in all_tasks(suite="ptx")])
def test_reference_is_correct_and_arch_verified(task_id):
    task = get_task(task_id)
    with Evaluator("cuda") as evaluator:
        result = evaluator.evaluate(task, task.solution_candidate(),
                                    EvalOptions(shape_sets=("dev", "heldout"), timing=False))
    assert result.correct, result.feedback
    assert result.arch_verified, result.feedback
    for feature in ("wgmma", "tma"):
        assert result.instructions[feature]["executed"] > 0


@pytest.mark.parametrize("solution", [None, "ptx/gemm-bf16-cuda"], ids=["triton-ptx", "cuda-c++"])
def test_a_timed_reference_shows_its_tensor_cores_by_its_rate(solution):
    """The arch-verified mark with timing on: the timed median must run the task's flops above 1.5x what CUDA
    cores reach without tensor cores (judge/tensor_core_timing.py); both GEMM references run near 720-770
    TFLOP/s, the hand-written one warp-specialised through the loader."""
    task = get_task("ptx/gemm-bf16")
    with Evaluator("cuda") as evaluator:
        result = evaluator.evaluate(task, task.solution_candidate(solution),
                                    EvalOptions(shape_sets=("dev",), timing=True))
    print(result.timed_tensor_cores)
    assert result.correct and result.arch_verified, result.feedback
    [evidence] = result.timed_tensor_cores
    assert evidence["shown"] and evidence["tflops"] > 3 * evidence["cuda_core_tflops"], evidence


def test_wgmma_in_dead_code_fails_with_a_message(tmp_path):
    """A correct GEMM whose wgmma path is compiled in but never taken."""
    reference = get_task("ptx/gemm-bf16").solution_candidate()
    naive = textwrap.dedent('''
        NAIVE = loader.load_cuda(r"""
        #include <cuda_bf16.h>
        extern "C" __global__ void naive(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c,
                                         int m, int n, int k) {
          int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
          if (row >= m || col >= n) return;
          float acc = 0.f;
          for (int i = 0; i < k; ++i) acc += __bfloat162float(a[row * k + i]) * __bfloat162float(b[col * k + i]);
          c[row * n + col] = __float2bfloat16(acc);
        }
        """, name="naive").kernel("naive")


        def gemm(a, b):
            m, k = a.shape
            n = b.shape[0]
            if m < 0:  # never: the wgmma kernel is built and analysed, but never launched
                return _gemm(a, b)
            c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
            NAIVE(a, b, c, m, n, k, grid=((n + 15) // 16, (m + 15) // 16), block=(16, 16))
            return c
    ''')
    head, tail = reference.source.split("\n# ---- GENERATED", 1)
    source = Candidate(head.replace("def gemm(", "def _gemm(") + naive + "\n# ---- GENERATED" + tail,
                       reference.attachments)
    task = get_task("ptx/gemm-bf16")
    with Evaluator("cuda") as evaluator:
        result = evaluator.evaluate(task, source, EvalOptions(shape_sets=("dev",), timing=False))
    assert result.correct, result.feedback
    assert result.instructions["wgmma"]["sass"] > 0 and result.instructions["wgmma"]["executed"] == 0
    assert result.required_features_met is False and result.arch_verified is False
    assert "dead code" in result.missing_features["wgmma"]


def test_memcheck_finds_an_out_of_bounds_write():
    source = textwrap.dedent('''
        import torch
        from warpgym import loader
        K = loader.load_cuda('extern "C" __global__ void k(unsigned short* c, int n) { c[n + threadIdx.x] = 0; }',
                             name="oob").kernel("k")

        def gemm(a, b):
            c = torch.empty((a.shape[0], b.shape[0]), dtype=torch.bfloat16, device=a.device)
            K(c, c.numel(), grid=1, block=64)
            return c
    ''')
    task = get_task("ptx/gemm-bf16")
    report = profile.memcheck_candidate(task.id, source, task.cases("dev")[0], target="sm_90a", timeout=300)
    assert not report.ok and report.errors > 0
    assert "Invalid __global__ write" in report.text
