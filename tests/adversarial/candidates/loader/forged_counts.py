"""ptx/gemm-bf16: a kernel that does nothing, whose compiled-instruction counts are rewritten after the build
(``kern.info.ptx_counts`` and ``sass_counts``) to claim wgmma, TMA and mbarriers."""

import torch

from warpgym import loader

PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry gemm_kernel(.param .u64 out)
{
    ret;
}
"""
mod = loader.load_ptx(PTX, name="gemm")
kern = mod.kernel("gemm_kernel")
for fam, n in (("wgmma", 64), ("tma", 8), ("mbarrier", 8)):
    kern.info.ptx_counts[fam] = n
    kern.info.sass_counts[fam] = n


def gemm(a, b):
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    kern(out, grid=1, block=128)
    return out
