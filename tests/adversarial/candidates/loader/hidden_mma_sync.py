"""ptx/gemm-bf16: a real mma.sync kernel (the older tensor cores, which the task's kind rule reports) whose
counts are wiped after the build and replaced by wgmma and TMA."""

import torch

from warpgym import loader

PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry gemm_kernel(.param .u64 out)
{
    .reg .b32 a<4>, b<2>;
    .reg .f32 c<4>, d<4>;
    .reg .b64 p;
    mov.b32 a0, 0; mov.b32 a1, 0; mov.b32 a2, 0; mov.b32 a3, 0;
    mov.b32 b0, 0; mov.b32 b1, 0;
    mov.f32 c0, 0f00000000; mov.f32 c1, 0f00000000; mov.f32 c2, 0f00000000; mov.f32 c3, 0f00000000;
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {d0,d1,d2,d3}, {a0,a1,a2,a3}, {b0,b1}, {c0,c1,c2,c3};
    ld.param.u64 p, [out];
    st.global.f32 [p], d0;
    ret;
}
"""
mod = loader.load_ptx(PTX, name="gemm")
kern = mod.kernel("gemm_kernel")
HIDE = "--hide" in open(__file__).read().split("#MODE:")[-1]
#MODE: --hide
for counts in (kern.info.ptx_counts, kern.info.sass_counts):
    counts.pop("mma.sync", None)
    counts.update({"wgmma": 64, "tma": 8})


def gemm(a, b):
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    kern(out, grid=1, block=32)
    return out
