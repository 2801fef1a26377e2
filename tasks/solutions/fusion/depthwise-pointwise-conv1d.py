"""Reference solution for fusion/depthwise-pointwise-conv1d: the depthwise output is the GEMM's B operand.

A program owns a (BLOCK_O output channels, BLOCK_L positions) tile of one sample. For each block of
BLOCK_C input channels it computes the depthwise result (Kw shifted loads of x, float32, plus the bias)
in registers, rounds it to the input dtype and multiplies it into the accumulator with tl.dot against the
(BLOCK_O, BLOCK_C) slice of the pointwise weights; the pointwise bias is added in the epilogue. The
depthwise output never reaches memory.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def dw_pw_kernel(x_ptr, dw_ptr, dwb_ptr, pw_ptr, pwb_ptr, out_ptr, C, COUT, L, KW: tl.constexpr,
                 BLOCK_O: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_L: tl.constexpr):
    offs_l = tl.program_id(0) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_o = tl.program_id(1) * BLOCK_O + tl.arange(0, BLOCK_O)
    batch = tl.program_id(2).to(tl.int64)
    o_ok = offs_o < COUT
    acc = tl.zeros((BLOCK_O, BLOCK_L), tl.float32)
    for c0 in range(0, C, BLOCK_C):
        offs_c = c0 + tl.arange(0, BLOCK_C)
        c_ok = offs_c < C
        rows = x_ptr + (batch * C + offs_c)[:, None] * L
        dw = tl.zeros((BLOCK_C, BLOCK_L), tl.float32)
        dw += tl.load(dwb_ptr + offs_c, mask=c_ok, other=0.0).to(tl.float32)[:, None]
        for j in tl.static_range(KW):
            src = offs_l + (j - KW // 2)
            in_range = (src >= 0) & (src < L)
            xv = tl.load(rows + src[None, :], mask=c_ok[:, None] & in_range[None, :], other=0.0)
            wj = tl.load(dw_ptr + offs_c * KW + j, mask=c_ok, other=0.0).to(tl.float32)
            dw += xv.to(tl.float32) * wj[:, None]
        pw = tl.load(pw_ptr + offs_o[:, None] * C + offs_c[None, :], mask=o_ok[:, None] & c_ok[None, :],
                     other=0.0)
        dw = tl.where(c_ok[:, None], dw, 0.0)
        acc = tl.dot(pw, dw.to(pw.dtype), acc)
    acc += tl.load(pwb_ptr + offs_o, mask=o_ok, other=0.0).to(tl.float32)[:, None]
    tl.store(out_ptr + (batch * COUT + offs_o)[:, None] * L + offs_l[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=o_ok[:, None] & (offs_l < L)[None, :])


def depthwise_pointwise_conv1d(x: torch.Tensor, dw_weight: torch.Tensor, dw_bias: torch.Tensor,
                               pw_weight: torch.Tensor, pw_bias: torch.Tensor) -> torch.Tensor:
    b, c, length = x.shape
    cout = pw_weight.shape[0]
    kw = dw_weight.shape[-1]
    out = torch.empty((b, cout, length), dtype=x.dtype, device=x.device)
    if cout * length >= 1024 * 1024:
        bo, bc, bl, warps = 128, 64, 128, 8
    else:
        bo, bc, bl, warps = 64, 32, 64, 4
    grid = (triton.cdiv(length, bl), triton.cdiv(cout, bo), b)
    dw_pw_kernel[grid](x.contiguous(), dw_weight.contiguous(), dw_bias, pw_weight.contiguous(), pw_bias, out,
                       c, cout, length, KW=kw, BLOCK_O=bo, BLOCK_C=bc, BLOCK_L=bl, num_warps=warps,
                       num_stages=3)
    return out
