"""ptx/gemm-bf16: no matrix multiply on tensor cores at all. The kernel holds wgmma.fence (a fence, not an
MMA) and a TMA L2 *prefetch* of nothing useful, then computes C with plain FMA loops. ptxas emits a
placeholder HGMMA (writing RZ) for the fences and an UTMAPF for the prefetch.
tests/adversarial/test_required_work.py."""
import torch

from warpgym import loader

CU = r"""
#include <cuda_bf16.h>
extern "C" __global__ void gemm_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c,
                                       int m, int n, int k, const void* tmap) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global [%0, {%1}];\n" :: "l"(tmap), "r"(0) : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) return;
    float acc = 0.f;
    for (int p = 0; p < k; ++p) acc += __bfloat162float(a[i * k + p]) * __bfloat162float(b[j * k + p]);
    c[i * n + j] = __float2bfloat16(acc);
}
"""
mod = loader.load_cuda(CU, name="gemm")
kern = mod.kernel("gemm_kernel")


def gemm(a, b):
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    kern(a, b, c, m, n, k, a,
         grid=((n + 15) // 16, (m + 15) // 16), block=(16, 16))
    return c
