"""ptx/gemm-bf16: a kernel that does nothing, whose module record answers the report with a forged
``to_wire`` set on the instance."""

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
_real = mod.record.to_wire


def _forged():
    d = _real()
    for k in d["kernels"]:
        k["ptx"] = {"wgmma": 128, "tma": 16, "mbarrier": 16}
        k["sass"] = {"wgmma": 128, "tma": 16, "mbarrier": 16}
    return d


mod.record.to_wire = _forged


def gemm(a, b):
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    kern(out, grid=1, block=128)
    return out
